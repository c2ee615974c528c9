"""Kubernetes manifests (deploy/k8s/): selectors, ports, references, kustomization."""

import os

from manifest_checks.common import WORKLOAD_KINDS, PATH_FLAGS, K8S_VAR_RE, label_set, selects


class K8sChecks:
    # ------------------------------------------------------------------ Kubernetes
    def check_k8s(self):
        objects = list(self.k8s_docs())
        by_kind = {}
        for rel, doc in objects:
            meta = doc.get("metadata") or {}
            if doc.get("kind") == "Kustomization":
                by_kind.setdefault("Kustomization", []).append((rel, doc))
                continue
            if not meta.get("name"):
                self.error(rel, f"{doc.get('kind')} without metadata.name")
                continue
            if not doc.get("apiVersion"):
                self.error(rel, f"{doc['kind']} {meta['name']}: no apiVersion")
            by_kind.setdefault(doc["kind"], []).append((rel, doc))

        kustomization = [(r, d) for r, d in objects if d.get("kind") == "Kustomization"]
        namespace = None
        if kustomization:
            namespace = kustomization[0][1].get("namespace")
        namespaces = {d["metadata"]["name"] for _, d in by_kind.get("Namespace", [])}

        def ns_of(doc):
            return (doc.get("metadata") or {}).get("namespace") or namespace or "default"

        for rel, doc in objects:
            kind = doc.get("kind")
            if kind in ("Namespace", "Kustomization"):
                continue
            ns = (doc.get("metadata") or {}).get("namespace")
            if namespace and ns and ns != namespace:
                self.error(rel, f"{kind} {doc['metadata']['name']}: namespace {ns}, but "
                                f"kustomization.yaml puts everything in {namespace}")
            if ns and ns not in namespaces:
                self.error(rel, f"{kind} {doc['metadata']['name']}: namespace {ns} is not "
                                f"defined by any Namespace manifest")

        # Defined Secrets and ConfigMaps: (namespace, name) -> set of keys.
        defined = {"Secret": {}, "ConfigMap": {}}
        for kind in defined:
            for _, doc in by_kind.get(kind, []):
                keys = set((doc.get("data") or {}).keys()) | set((doc.get("stringData") or {}).keys())
                defined[kind][(ns_of(doc), doc["metadata"]["name"])] = keys

        workloads = []  # (rel, doc, pod labels, pod spec)
        for kind in WORKLOAD_KINDS:
            for rel, doc in by_kind.get(kind, []):
                spec = doc.get("spec") or {}
                template = spec.get("template") or {}
                labels = label_set((template.get("metadata") or {}).get("labels"))
                selector = label_set((spec.get("selector") or {}).get("matchLabels"))
                name = f"{kind} {doc['metadata']['name']}"
                if not selector:
                    self.error(rel, f"{name}: no spec.selector.matchLabels")
                elif not selects(selector, labels):
                    self.error(rel, f"{name}: selector {selector} does not match its own pod "
                                    f"labels {labels}")
                pod = template.get("spec") or {}
                workloads.append((rel, doc, labels, pod))
                self.check_pod(rel, name, ns_of(doc), template, pod, defined)

        def matching(rel, what, ns, selector):
            found = [w for w in workloads if ns_of(w[1]) == ns and selects(selector, w[2])]
            if not found:
                self.error(rel, f"{what}: selector {selector} matches no Deployment/StatefulSet/"
                                f"DaemonSet pod labels in namespace {ns}")
            return found

        def container_ports(pod):
            ports = []
            for c in pod.get("containers") or []:
                ports += c.get("ports") or []
            return ports

        for rel, doc in by_kind.get("Service", []):
            name = f"Service {doc['metadata']['name']}"
            spec = doc.get("spec") or {}
            selector = label_set(spec.get("selector"))
            if not selector:
                self.error(rel, f"{name}: no selector")
                continue
            pods = matching(rel, name, ns_of(doc), selector)
            for port in spec.get("ports") or []:
                target = port.get("targetPort", port.get("port"))
                label = port.get("name") or port.get("port")
                for wrel, wdoc, _, pod in pods:
                    ports = container_ports(pod)
                    if isinstance(target, str):
                        ok = any(p.get("name") == target for p in ports)
                    else:
                        ok = any(p.get("containerPort") == target for p in ports)
                    if not ok:
                        have = ", ".join(str(p.get("name") or p.get("containerPort")) for p in ports)
                        self.error(rel, f"{name}: port {label}: targetPort {target!r} is not a "
                                        f"containerPort of {wdoc['kind']} {wdoc['metadata']['name']}"
                                        f" ({wrel}; it has: {have or 'none'})")

        for rel, doc in by_kind.get("PodDisruptionBudget", []):
            selector = label_set(((doc.get("spec") or {}).get("selector") or {}).get("matchLabels"))
            matching(rel, f"PodDisruptionBudget {doc['metadata']['name']}", ns_of(doc), selector)

        for rel, doc in by_kind.get("NetworkPolicy", []):
            name = f"NetworkPolicy {doc['metadata']['name']}"
            spec = doc.get("spec") or {}
            selector = label_set((spec.get("podSelector") or {}).get("matchLabels"))
            targets = matching(rel, name, ns_of(doc), selector) if selector else []
            for rule in spec.get("ingress") or []:
                for peer in rule.get("from") or []:
                    peer_selector = label_set((peer.get("podSelector") or {}).get("matchLabels"))
                    if peer_selector and "namespaceSelector" not in peer:
                        matching(rel, f"{name}: ingress from", ns_of(doc), peer_selector)
                for port in rule.get("ports") or []:
                    p = port.get("port")
                    for wrel, wdoc, _, pod in targets:
                        ports = container_ports(pod)
                        key = "name" if isinstance(p, str) else "containerPort"
                        if p is not None and not any(q.get(key) == p for q in ports):
                            self.error(rel, f"{name}: port {p!r} is not a containerPort of "
                                            f"{wdoc['kind']} {wdoc['metadata']['name']} ({wrel})")

        self.k8s_workloads = workloads
        self.check_kustomization(kustomization, objects)

    def check_pod(self, rel, name, ns, template, pod, defined):
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        for vname, volume in volumes.items():
            sources = []
            if "secret" in volume:
                s = volume["secret"]
                sources.append(("Secret", s.get("secretName"), s.get("items")))
            if "configMap" in volume:
                c = volume["configMap"]
                sources.append(("ConfigMap", c.get("name"), c.get("items")))
            for src in (volume.get("projected") or {}).get("sources") or []:
                if "secret" in src:
                    sources.append(("Secret", src["secret"].get("name"), src["secret"].get("items")))
                if "configMap" in src:
                    sources.append(("ConfigMap", src["configMap"].get("name"),
                                    src["configMap"].get("items")))
            for kind, ref, items in sources:
                self.check_ref(rel, f"{name}: volume {vname}", kind, ns, ref,
                               [i.get("key") for i in items or []], defined)

        containers = [("container", c) for c in pod.get("containers") or []] + \
                     [("initContainer", c) for c in pod.get("initContainers") or []]
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        for role, c in containers:
            cname = f"{name}: {role} {c.get('name')}"
            for mount in c.get("volumeMounts") or []:
                if mount.get("name") not in volumes:
                    self.error(rel, f"{cname}: volumeMount {mount.get('name')!r} names no volume "
                                    f"of the pod (volumes: {', '.join(sorted(map(str, volumes)))})")
            env_names = set()
            for env in c.get("env") or []:
                env_names.add(env.get("name"))
                value_from = env.get("valueFrom") or {}
                for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                    if key in value_from:
                        ref = value_from[key]
                        if not ref.get("optional"):
                            self.check_ref(rel, f"{cname}: env {env.get('name')}", kind, ns,
                                           ref.get("name"), [ref.get("key")], defined)
            for env_from in c.get("envFrom") or []:
                for key, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                    if key in env_from and not env_from[key].get("optional"):
                        self.check_ref(rel, f"{cname}: envFrom", kind, ns,
                                       env_from[key].get("name"), [], defined)
            argv = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
            for arg in argv:
                for var in K8S_VAR_RE.findall(arg):
                    if var not in env_names:
                        self.error(rel, f"{cname}: $({var}) in its arguments is not an env var of "
                                        f"the container (Kubernetes would pass it literally)")
            ports = c.get("ports") or []
            for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
                probe = c.get(probe_name)
                if not probe:
                    continue
                for handler in ("httpGet", "tcpSocket", "grpc"):
                    if handler not in probe:
                        continue
                    port = (probe[handler] or {}).get("port")
                    if handler == "grpc" and not isinstance(port, int):
                        self.error(rel, f"{cname}: {probe_name}: grpc probes need a port number, "
                                        f"not {port!r}")
                        continue
                    key = "name" if isinstance(port, str) else "containerPort"
                    if not any(p.get(key) == port for p in ports):
                        self.error(rel, f"{cname}: {probe_name}: {handler} port {port!r} is not a "
                                        f"containerPort of the container")
            if self.is_uopd_image(c.get("image")) and role == "container":
                flags = self.check_flag_list(f"{rel}: {cname}", c.get("args") or [])
                self.check_uopd_container(rel, cname, c, flags, annotations)

        if annotations.get("prometheus.io/scrape") == "true":
            port = annotations.get("prometheus.io/port")
            numbers = {p.get("containerPort") for _, c in containers for p in c.get("ports") or []}
            if port is None or not str(port).isdigit() or int(port) not in numbers:
                self.error(rel, f"{name}: annotation prometheus.io/port {port!r} is not a "
                                f"containerPort of the pod ({sorted(n for n in numbers if n)})")
            path = annotations.get("prometheus.io/path", "/metrics")
            if not str(path).startswith("/"):
                self.error(rel, f"{name}: annotation prometheus.io/path {path!r} must start with /")

    def is_uopd_image(self, image):
        if not image:
            return False
        base = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]
        return base == "uopd"

    def check_uopd_container(self, rel, cname, c, flags, annotations):
        ports = c.get("ports") or []
        numbers = {p.get("containerPort") for p in ports}
        for flag in ("listen", "metrics"):
            value = flags.get(flag)
            if value and not value.startswith("unix:"):
                port = value.rsplit(":", 1)[-1]
                if not port.isdigit() or int(port) not in numbers:
                    self.error(rel, f"{cname}: --{flag}={value}: port {port} is not a "
                                    f"containerPort of the container")
        metrics = flags.get("metrics")
        scrape_port = annotations.get("prometheus.io/port")
        if metrics and scrape_port and metrics.rsplit(":", 1)[-1] != str(scrape_port):
            self.error(rel, f"{cname}: prometheus.io/port {scrape_port} is not the --metrics "
                            f"port ({metrics})")
        if metrics and metrics.rsplit(":", 1)[0] in ("127.0.0.1", "localhost", "[::1]"):
            self.error(rel, f"{cname}: --metrics={metrics} listens on loopback only: Prometheus "
                            f"cannot scrape it")
        mounts = [m.get("mountPath", "") for m in c.get("volumeMounts") or []]
        for flag in PATH_FLAGS:
            value = flags.get(flag)
            if value and value.startswith("/") and not any(
                    value == m or value.startswith(m.rstrip("/") + "/") for m in mounts):
                self.error(rel, f"{cname}: --{flag}={value} is on no mounted volume (mounts: "
                                f"{', '.join(mounts) or 'none'})")

    def check_ref(self, rel, what, kind, ns, ref, keys, defined):
        if not ref:
            self.error(rel, f"{what}: {kind} reference without a name")
            return
        have = defined[kind].get((ns, ref))
        if have is None:
            self.error(rel, f"{what}: {kind} {ref!r} is not defined in any manifest under deploy/k8s "
                            f"(namespace {ns})")
            return
        for key in keys:
            if key and key not in have:
                self.error(rel, f"{what}: {kind} {ref!r} has no key {key!r} (it has: "
                                f"{', '.join(sorted(have)) or 'none'})")

    def check_kustomization(self, kustomization, objects):
        k8s_dir = os.path.join(self.deploy, "k8s")
        if not os.path.isdir(k8s_dir):
            return
        rel_k = self.rel(os.path.join(k8s_dir, "kustomization.yaml"))
        if not kustomization:
            self.error(rel_k, "missing (deploy/k8s/ needs a kustomization.yaml)")
            return
        rel, doc = kustomization[0]
        resources = doc.get("resources") or []
        files = sorted(f for f in os.listdir(k8s_dir)
                       if f.endswith((".yaml", ".yml")) and f not in (
                           "kustomization.yaml", "kustomization.yml")
                       and not f.endswith((".example.yaml", ".example.yml")))
        for r in resources:
            if not os.path.exists(os.path.join(k8s_dir, r)):
                self.error(rel, f"resources: {r} does not exist in deploy/k8s/")
            elif r.endswith((".example.yaml", ".example.yml")):
                self.error(rel, f"resources: {r} is an example with placeholders: applying it would "
                                f"overwrite the real secrets")
        for f in files:
            if f not in resources:
                self.error(rel, f"resources: {f} (in deploy/k8s/) is not listed")
        if len(set(resources)) != len(resources):
            self.error(rel, "resources: a file is listed twice")
        images = set()
        for _, d in objects:
            pod = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
            for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                if c.get("image"):
                    images.add(c["image"].split("@")[0].split(":")[0] if "/" not in c["image"]
                               else c["image"].rsplit(":", 1)[0])
        for image in doc.get("images") or []:
            if image.get("name") not in images:
                self.error(rel, f"images: {image.get('name')!r} is the image of no container "
                                f"(images used: {', '.join(sorted(images))})")
