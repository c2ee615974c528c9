#!/usr/bin/env python3
"""Checks deploy/: every YAML file parses, and what the files refer to exists.

    python3 tests/deploy/check_manifests.py REPO_ROOT             # check REPO_ROOT/deploy
    python3 tests/deploy/check_manifests.py REPO_ROOT --self-test # prove the checks can fail

Kubernetes (deploy/k8s/): workload selectors match their pod labels; every Service,
NetworkPolicy and PodDisruptionBudget selects some workload's pods; Service targetPorts,
NetworkPolicy ports and probe ports exist as containerPorts; Secrets and ConfigMaps referenced
by volumes, env and envFrom (and the keys asked for) are defined in some manifest
(secret.example.yaml counts); volumeMounts name pod volumes; $(VAR) in args names an env var of
the container; the prometheus.io annotations name a containerPort, and --metrics/--listen match
the ports; path flags lie on a mounted volume; kustomization.yaml lists exactly the manifests
beside it (*.example.yaml excepted: applying placeholders would overwrite real secrets) and its
image names are used.
Compose (deploy/compose.yaml): depends_on names services (and service_healthy ones have a
healthcheck), named volumes are declared, bind-mounted files and the build context and
Dockerfile exist, uopd's ports are exposed.
Prometheus (deploy/prometheus/): scrape targets are compose services on a port they expose, rule
files are mounted into the prometheus service from files that exist, alert expressions use only
uopd's metric names (the list below plus server/metrics.cc's) with known label values.
Dockerfile: files it copies and runs exist, EXPOSE matches uopd.yaml's containerPorts, USER is
numeric, non-root and the uid the manifests run as.
Daemon flags: every --name=value given to uopd (k8s args, compose commands, the Dockerfile's
CMD, uopd.flags, uopd.service) is an ABSL_FLAG of server/daemon_config.cc (or in PENDING_FLAGS, with a
warning), with a value of the flag's type; --redis_url comes with --cluster_key_file.

Exits 0 when all hold, 1 naming each file and broken reference otherwise, 77 (a CTest skip)
without PyYAML (Debian: python3-yaml).
"""

import copy
import os
import re
import shutil
import sys
import tempfile

try:
    import yaml
except ImportError:  # pragma: no cover
    print("check_manifests: SKIP: PyYAML is not installed (Debian: apt-get install python3-yaml)")
    sys.exit(77)

# Flags a change to the daemon is adding while deploy/ already uses them: name -> kind
# ("string", "int", "bool", "duration"). Accepted, with a warning, while server/daemon_config.cc does not
# define them; the check says when an entry has become stale. (The Redis tier's flags, issue 10,
# were listed here until server/daemon_config.cc defined them.)
PENDING_FLAGS = {}
# Flags every absl program has.
ABSL_BUILTIN_FLAGS = {"flagfile": "string", "fromenv": "string", "tryfromenv": "string",
                      "undefok": "string"}

TIERS = {"memory", "disk", "redis"}
# The metrics uopd exports (some arriving with the Redis tier), with the values their labels
# take where they are a fixed set (None: any value).
METRICS = {
    "uopd_cache_requests_total": {"tier": TIERS,
                                  "result": {"hit", "miss", "corrupt", "rejected"}},
    "uopd_cache_errors_total": {"tier": TIERS},
    "uopd_cache_read_bytes_total": {"tier": TIERS},
    "uopd_cache_written_bytes_total": {"tier": TIERS},
    "uopd_cache_breaker_open": {"tier": TIERS},
    "uopd_cache_publish_total": {"tier": TIERS, "result": {"published", "failed", "dropped"}},
    "uopd_cache_publish_queue_bytes": {"tier": TIERS},
    "uopd_compilations_total": {"backend": None},
    "uopd_compile_worker_events_total": {"event": {"started", "crashed", "timed_out",
                                                   "cancelled"}},
    "uopd_cache_bytes": {"tier": TIERS},
    "uopd_cache_entries": {"tier": TIERS},
}
# Labels Prometheus adds to every series it scrapes.
TARGET_LABELS = {"instance", "job"}

WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet"}
# Flags whose value is a file or directory the daemon opens.
PATH_FLAGS = {"cache_dir", "cluster_key_file", "identities", "tls_cert", "tls_key",
              "tls_client_ca", "port_file"}

DURATION_RE = re.compile(r"^(0|inf|-inf|-?(\d+(\.\d*)?|\.\d+)(ns|us|ms|s|m|h)"
                         r"((\d+(\.\d*)?|\.\d+)(ns|us|ms|s|m|h))*)$")
FLAG_RE = re.compile(r"^--([a-z][a-z0-9_]*)=(.*)$", re.S)
K8S_VAR_RE = re.compile(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def label_set(d):
    return dict(d or {})


def selects(selector, labels):
    """Whether matchLabels-style `selector` (non-empty) selects `labels`."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class Checker:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.deploy = os.path.join(self.root, "deploy")
        self.errors = []
        self.warnings = []
        self.docs = {}  # relative path -> [documents]
        self.flag_types = {}
        self.pending_used = set()
        self.metric_names = set(METRICS)

    # ------------------------------------------------------------------ reporting
    def rel(self, path):
        return os.path.relpath(path, self.root)

    def error(self, where, message):
        self.errors.append(f"{where}: {message}")

    def warn(self, where, message):
        self.warnings.append(f"{where}: {message}")

    # ------------------------------------------------------------------ loading
    def load(self):
        if not os.path.isdir(self.deploy):
            self.error(self.rel(self.deploy), "no such directory")
            return
        for dirpath, dirnames, filenames in os.walk(self.deploy):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith((".yaml", ".yml")):
                    continue
                path = os.path.join(dirpath, name)
                rel = self.rel(path)
                try:
                    with open(path, encoding="utf-8") as f:
                        docs = [d for d in yaml.safe_load_all(f) if d is not None]
                except yaml.YAMLError as e:
                    self.error(rel, f"does not parse as YAML: {e}")
                    continue
                self.docs[rel] = docs
        self.load_daemon_flags()
        self.load_metric_names()

    def load_daemon_flags(self):
        main_cc = os.path.join(self.root, "server", "daemon_config.cc")
        try:
            with open(main_cc, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            self.error("server/daemon_config.cc", f"cannot read the daemon's flags: {e}")
            return
        for type_, name in re.findall(r"ABSL_FLAG\(\s*([^,]+?)\s*,\s*([a-z][a-z0-9_]*)\s*,", text):
            if "Duration" in type_:
                kind = "duration"
            elif type_ == "bool":
                kind = "bool"
            elif "int" in type_:
                kind = "int"
            elif "double" in type_ or "float" in type_:
                kind = "float"
            else:
                kind = "string"
            self.flag_types[name] = kind
        if not self.flag_types:
            self.error("server/daemon_config.cc", "no ABSL_FLAG(type, name, ...) lines found")
        stale = sorted(set(PENDING_FLAGS) & set(self.flag_types))
        if stale:
            self.warn("tests/deploy/check_manifests.py",
                      "server/daemon_config.cc now defines " + ", ".join("--" + s for s in stale) +
                      ": remove them from PENDING_FLAGS")

    def load_metric_names(self):
        metrics_cc = os.path.join(self.root, "server", "metrics.cc")
        try:
            with open(metrics_cc, encoding="utf-8") as f:
                self.metric_names |= set(re.findall(r'"(uopd_[a-z_]+)"', f.read()))
        except OSError:
            pass

    def k8s_docs(self):
        """(file, document) for every Kubernetes object under deploy/k8s/."""
        for rel, docs in self.docs.items():
            if not rel.startswith(os.path.join("deploy", "k8s") + os.sep):
                continue
            for doc in docs:
                if isinstance(doc, dict) and "kind" in doc:
                    yield rel, doc

    # ------------------------------------------------------------------ daemon flags
    def check_flag(self, where, token):
        """Checks one `--name=value` given to uopd; returns (name, value) or None."""
        m = FLAG_RE.match(token)
        if not m:
            return None
        name, value = m.group(1), m.group(2)
        kind = self.flag_types.get(name) or ABSL_BUILTIN_FLAGS.get(name)
        if kind is None and name in PENDING_FLAGS:
            kind = PENDING_FLAGS[name]
            if name not in self.pending_used:
                self.pending_used.add(name)
                self.warn(where, f"--{name} is not in server/daemon_config.cc yet (accepted: PENDING_FLAGS)")
        if kind is None:
            self.error(where, f"--{name} is not a flag of uopd (server/daemon_config.cc defines no "
                              f"ABSL_FLAG named {name})")
            return name, value
        substituted = "$" in value
        if kind == "int" and not substituted and not re.fullmatch(r"-?\d+", value):
            self.error(where, f"--{name}={value}: not an integer")
        elif kind == "duration" and not substituted and not DURATION_RE.match(value):
            self.error(where, f"--{name}={value}: not a duration (e.g. 30s, 250ms, 168h)")
        elif kind == "bool" and value not in ("true", "false", "1", "0", "yes", "no", "t", "f",
                                              "y", "n"):
            self.error(where, f"--{name}={value}: not a bool")
        return name, value

    def check_flag_list(self, where, tokens):
        """Checks uopd's command line; returns {name: value}."""
        flags = {}
        for token in tokens:
            if not isinstance(token, str):
                self.error(where, f"argument {token!r} is not a string")
                continue
            if token.startswith("--"):
                if "=" not in token:
                    self.error(where, f"{token}: give daemon flags as --name=value")
                    continue
                got = self.check_flag(where, token)
                if got:
                    flags[got[0]] = got[1]
        if "redis_url" in flags and "cluster_key_file" not in flags:
            self.error(where, "--redis_url without --cluster_key_file (the daemon requires the "
                              "cluster key to sign and check shared entries)")
        return flags

    def check_flag_files(self):
        flags_file = os.path.join(self.deploy, "uopd.flags")
        if os.path.exists(flags_file):
            with open(flags_file, encoding="utf-8") as f:
                lines = [l.strip() for l in f if l.strip() and not l.strip().startswith("#")]
            self.check_flag_list(self.rel(flags_file), lines)
        unit = os.path.join(self.deploy, "uopd.service")
        if os.path.exists(unit):
            with open(unit, encoding="utf-8") as f:
                for line in f:
                    if line.startswith("ExecStart="):
                        self.check_flag_list(self.rel(unit), line.split()[1:])

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

    # ------------------------------------------------------------------ compose
    def compose_file(self):
        for name in ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"):
            rel = os.path.join("deploy", name)
            if rel in self.docs:
                return rel
        return None

    def check_compose(self):
        rel = self.compose_file()
        self.compose = {}
        if rel is None:
            return
        docs = self.docs[rel]
        if len(docs) != 1 or not isinstance(docs[0], dict) or "services" not in docs[0]:
            self.error(rel, "expected one document with services:")
            return
        compose = docs[0]
        services = compose.get("services") or {}
        self.compose = services
        volumes = set((compose.get("volumes") or {}).keys())
        base = os.path.dirname(os.path.join(self.root, rel))

        for sname, svc in services.items():
            where = f"{rel}: service {sname}"
            if not isinstance(svc, dict):
                self.error(rel, f"service {sname} is not a mapping")
                continue
            depends = svc.get("depends_on") or {}
            if isinstance(depends, list):
                depends = {d: {"condition": "service_started"} for d in depends}
            for dep, cond in depends.items():
                if dep not in services:
                    self.error(where, f"depends_on {dep!r}, which is not a service")
                    continue
                condition = (cond or {}).get("condition", "service_started")
                if condition not in ("service_started", "service_healthy",
                                     "service_completed_successfully"):
                    self.error(where, f"depends_on {dep}: unknown condition {condition!r}")
                if condition == "service_healthy" and "healthcheck" not in services[dep]:
                    self.error(where, f"depends_on {dep}: service_healthy, but {dep} has no "
                                      f"healthcheck")
            for volume in svc.get("volumes") or []:
                source, target = self.compose_volume(volume)
                if source is None:
                    continue
                if source.startswith((".", "/", "~")):
                    path = os.path.normpath(os.path.join(base, source))
                    if not os.path.exists(path):
                        self.error(where, f"volume {source}:{target}: {self.rel(path)} does not "
                                          f"exist")
                elif source not in volumes:
                    self.error(where, f"volume {source!r} is not declared under top-level volumes:")
            build = svc.get("build")
            if build is not None:
                if isinstance(build, str):
                    build = {"context": build}
                context = os.path.normpath(os.path.join(base, build.get("context", ".")))
                if not os.path.isdir(context):
                    self.error(where, f"build context {build.get('context')} ({self.rel(context)}) "
                                      f"does not exist")
                dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
                if not os.path.isfile(dockerfile):
                    self.error(where, f"build dockerfile {build.get('dockerfile')} "
                                      f"({self.rel(dockerfile)}) does not exist")
            # uopd's own command line (not one-shot services that replace the entrypoint).
            if self.is_uopd_service(svc) and svc.get("entrypoint") is None:
                command = svc.get("command") or []
                if isinstance(command, str):
                    command = command.split()
                flags = self.check_flag_list(where, command)
                exposed = self.compose_container_ports(svc)
                for flag in ("listen", "metrics"):
                    value = flags.get(flag)
                    if value and not value.startswith("unix:"):
                        port = value.rsplit(":", 1)[-1]
                        if port not in exposed:
                            self.error(where, f"--{flag}={value}: port {port} is not in the "
                                              f"service's expose: or ports:")
                targets = [self.compose_volume(v)[1] for v in svc.get("volumes") or []]
                targets += list(svc.get("tmpfs") or [])
                for flag in PATH_FLAGS:
                    value = flags.get(flag)
                    if value and value.startswith("/") and not any(
                            t and (value == t or value.startswith(t.rstrip("/") + "/"))
                            for t in targets):
                        self.error(where, f"--{flag}={value} is on no volume of the service")
                svc["_uopd_flags"] = flags

        for key in ("configs", "secrets"):
            for name, spec in (compose.get(key) or {}).items():
                f = (spec or {}).get("file")
                if f and not os.path.exists(os.path.join(base, f)):
                    self.error(rel, f"{key} {name}: file {f} does not exist")
            for sname, svc in services.items():
                for ref in (svc.get(key) or []) if isinstance(svc, dict) else []:
                    name = ref.get("source") if isinstance(ref, dict) else ref
                    if name not in (compose.get(key) or {}):
                        self.error(f"{rel}: service {sname}",
                                   f"{key}: {name!r} is not declared under top-level {key}:")

    @staticmethod
    def compose_volume(volume):
        if isinstance(volume, str):
            parts = volume.split(":")
            if len(parts) == 1:
                return None, parts[0]
            return parts[0], parts[1]
        if isinstance(volume, dict):
            return volume.get("source"), volume.get("target")
        return None, None

    @staticmethod
    def compose_container_ports(svc):
        ports = {str(p) for p in svc.get("expose") or []}
        for p in svc.get("ports") or []:
            if isinstance(p, dict):
                ports.add(str(p.get("target")))
            else:
                ports.add(str(p).split("/")[0].rsplit(":", 1)[-1])
        return ports

    def is_uopd_service(self, svc):
        build = svc.get("build")
        if isinstance(build, dict) and str(build.get("dockerfile", "")).endswith("deploy/Dockerfile"):
            return True
        return self.is_uopd_image(svc.get("image"))

    # ------------------------------------------------------------------ Prometheus
    def check_prometheus(self):
        compose_rel = self.compose_file() or "deploy/compose.yaml"
        services = getattr(self, "compose", {}) or {}
        # Where the compose prometheus service mounts each file of deploy/.
        mounts = {}
        prom_service = None
        for sname, svc in services.items():
            if isinstance(svc, dict) and "prometheus" in str(svc.get("image", "")):
                prom_service = sname
                for v in svc.get("volumes") or []:
                    source, target = self.compose_volume(v)
                    if source and source.startswith("."):
                        mounts[target] = os.path.normpath(os.path.join("deploy", source))
        for rel, docs in self.docs.items():
            for doc in docs:
                if not isinstance(doc, dict):
                    continue
                if "scrape_configs" in doc:
                    self.check_scrape_config(rel, doc, services, mounts, prom_service, compose_rel)
                if "groups" in doc:
                    self.check_rules(rel, doc)

    def check_scrape_config(self, rel, doc, services, mounts, prom_service, compose_rel):
        if prom_service and rel not in mounts.values():
            self.error(compose_rel, f"service {prom_service}: {rel} is not mounted into it")
        for rule_file in doc.get("rule_files") or []:
            source = mounts.get(rule_file)
            if source is None:
                self.error(rel, f"rule_files: {rule_file} is not a file the compose service "
                                f"{prom_service or '(none)'} mounts from deploy/")
            elif not os.path.isfile(os.path.join(self.root, source)):
                self.error(rel, f"rule_files: {rule_file} is mounted from {source}, which does not "
                                f"exist")
        for job in doc.get("scrape_configs") or []:
            for static in job.get("static_configs") or []:
                for target in static.get("targets") or []:
                    host, _, port = str(target).rpartition(":")
                    where = f"{rel}: job {job.get('job_name')}: target {target}"
                    if host not in services:
                        self.error(where, f"{host!r} is not a service of {compose_rel}")
                        continue
                    svc = services[host]
                    if port not in self.compose_container_ports(svc):
                        self.error(where, f"service {host} does not expose port {port}")
                    metrics = (svc.get("_uopd_flags") or {}).get("metrics")
                    if metrics and metrics.rsplit(":", 1)[-1] != port:
                        self.error(where, f"service {host} serves metrics on {metrics}, not port "
                                          f"{port}")

    def check_rules(self, rel, doc):
        for group in doc.get("groups") or []:
            for rule in group.get("rules") or []:
                name = rule.get("alert") or rule.get("record")
                where = f"{rel}: {'alert' if 'alert' in rule else 'rule'} {name}"
                expr = rule.get("expr")
                if not name or not expr:
                    self.error(rel, f"group {group.get('name')}: a rule without alert/record or expr")
                    continue
                if "for" in rule and not re.fullmatch(r"(\d+(ms|s|m|h|d|w|y))+", str(rule["for"])):
                    self.error(where, f"for: {rule['for']!r} is not a Prometheus duration")
                self.check_expr(where, str(expr))

    def check_expr(self, where, expr):
        for token in re.findall(r"\buopd_[a-z_]+", expr):
            name = token
            for suffix in ("_bucket", "_sum", "_count"):
                if token.endswith(suffix) and token[: -len(suffix)] in self.metric_names:
                    name = token[: -len(suffix)]
            if name not in self.metric_names:
                self.error(where, f"metric {token} is not one uopd exports (known: the list in "
                                  f"tests/deploy/check_manifests.py and server/metrics.cc)")
        for metric, matchers in re.findall(r"\b(uopd_[a-z_]+)\s*\{([^}]*)\}", expr):
            labels = METRICS.get(metric)
            if labels is None:
                continue
            for label, op, value in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"', matchers):
                if label in TARGET_LABELS:
                    continue
                if label not in labels:
                    self.error(where, f"{metric} has no label {label!r} (labels: "
                                      f"{', '.join(sorted(labels))})")
                elif op in ("=", "!=") and labels[label] is not None and value not in labels[label]:
                    self.error(where, f"{metric}{{{label}={value!r}}}: {label} is one of "
                                      f"{', '.join(sorted(labels[label]))}")

    # ------------------------------------------------------------------ Dockerfile
    def check_dockerfile(self):
        path = os.path.join(self.deploy, "Dockerfile")
        rel = self.rel(path)
        if not os.path.exists(path):
            self.error(rel, "missing")
            return
        with open(path, encoding="utf-8") as f:
            text = f.read()
        instructions = []
        current = ""
        for line in text.splitlines():
            stripped = line.strip()
            if not current and (not stripped or stripped.startswith("#")):
                continue
            if current and stripped.startswith("#"):
                continue
            if stripped.endswith("\\"):
                current += stripped[:-1] + " "
                continue
            current += stripped
            instructions.append(current)
            current = ""
        stages = []
        for ins in instructions:
            word, _, rest = ins.partition(" ")
            word = word.upper()
            if word == "FROM":
                stages.append([])
            if stages:
                stages[-1].append((word, rest.strip()))
        if not stages:
            self.error(rel, "no FROM")
            return
        final = stages[-1]
        exposed = set()
        user = None
        entrypoint = cmd = None
        for word, rest in final:
            if word == "EXPOSE":
                for p in rest.split():
                    exposed.add(int(p.split("/")[0]))
            elif word == "USER":
                user = rest
            elif word == "ENTRYPOINT":
                entrypoint = rest
            elif word == "CMD":
                cmd = rest
        for stage in stages:
            for word, rest in stage:
                if word in ("COPY", "ADD"):
                    args = rest.split()
                    if any(a.startswith("--from=") for a in args):
                        continue
                    sources = [a for a in args if not a.startswith("--")][:-1]
                    for s in sources:
                        if s != "." and not os.path.exists(os.path.join(self.root, s)):
                            self.error(rel, f"{word} {s}: no such file in the repository")
                elif word == "RUN":
                    for s in re.findall(r"(?<![\w/.-])((?:deploy|scripts)/[\w./-]+)", rest):
                        if not os.path.exists(os.path.join(self.root, s)):
                            self.error(rel, f"RUN uses {s}, which does not exist")
        if user is None:
            self.error(rel, "no USER in the final stage: the daemon would run as root")
        else:
            uid = user.split(":")[0]
            if uid in ("root", "0"):
                self.error(rel, f"USER {user}: the daemon must not run as root")
            elif not uid.isdigit():
                self.error(rel, f"USER {user}: give a numeric uid (Kubernetes' runAsNonRoot can "
                                f"only verify a numeric one)")
            else:
                self.check_uid(rel, int(uid))
        if entrypoint is None or "/usr/local/bin/uopd" not in entrypoint:
            self.error(rel, f"ENTRYPOINT {entrypoint}: expected the daemon, /usr/local/bin/uopd")
        if cmd:
            try:
                argv = yaml.safe_load(cmd)
            except yaml.YAMLError:
                argv = None
            if not isinstance(argv, list):
                self.error(rel, f"CMD {cmd}: use the JSON form")
            else:
                self.check_flag_list(f"{rel}: CMD", argv)

        deployment_ports = set()
        for wrel, doc, _, pod in getattr(self, "k8s_workloads", []):
            for c in pod.get("containers") or []:
                if self.is_uopd_image(c.get("image")):
                    deployment_ports |= {p.get("containerPort") for p in c.get("ports") or []}
        if deployment_ports and exposed != deployment_ports:
            self.error(rel, f"EXPOSE {' '.join(map(str, sorted(exposed)))} differs from the uopd "
                            f"containerPorts of deploy/k8s ({' '.join(map(str, sorted(deployment_ports)))})")
        for sname, svc in (getattr(self, "compose", {}) or {}).items():
            if isinstance(svc, dict) and self.is_uopd_service(svc):
                for p in svc.get("expose") or []:
                    if int(str(p).split("/")[0]) not in exposed:
                        self.error(f"{self.compose_file()}: service {sname}",
                                   f"expose {p}: the Dockerfile does not EXPOSE it")

    def check_uid(self, rel, uid):
        for wrel, doc, _, pod in getattr(self, "k8s_workloads", []):
            pod_ctx = pod.get("securityContext") or {}
            for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                if not self.is_uopd_image(c.get("image")):
                    continue
                ctx = c.get("securityContext") or {}
                run_as = ctx.get("runAsUser", pod_ctx.get("runAsUser"))
                if run_as is not None and run_as != uid:
                    self.error(wrel, f"{doc['kind']} {doc['metadata']['name']}: container "
                                     f"{c.get('name')} runs as uid {run_as}, but the image's USER "
                                     f"(and its files) are uid {uid} ({rel})")
                if not ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")):
                    self.error(wrel, f"{doc['kind']} {doc['metadata']['name']}: container "
                                     f"{c.get('name')}: set securityContext.runAsNonRoot")
        for sname, svc in (getattr(self, "compose", {}) or {}).items():
            if isinstance(svc, dict) and self.is_uopd_service(svc) and "user" in svc:
                if str(svc["user"]).split(":")[0] != str(uid):
                    self.error(f"{self.compose_file()}: service {sname}",
                               f"user {svc['user']}: the image's files belong to uid {uid}")

    # ------------------------------------------------------------------ all
    def run(self):
        self.load()
        self.check_flag_files()
        self.check_k8s()
        self.check_compose()
        self.check_prometheus()
        self.check_dockerfile()
        return self.errors


def check(root, quiet=False):
    checker = Checker(root)
    errors = checker.run()
    if not quiet:
        for w in checker.warnings:
            print(f"warning: {w}")
        for e in errors:
            print(f"error: {e}")
    return checker, errors


# Each breaks one reference in a copy of deploy/; the checker must report it, naming the file
# and what is broken.
MUTATIONS = [
    ("Service targetPort renamed", "deploy/k8s/service.yaml",
     "targetPort: grpc", "targetPort: grpcx", ["deploy/k8s/service.yaml", "'grpcx'"]),
    ("Service selector changed", "deploy/k8s/redis.yaml",
     "  selector:\n    app.kubernetes.io/name: uopd-redis",
     "  selector:\n    app.kubernetes.io/name: uopd-rediz",
     ["deploy/k8s/redis.yaml", "Service uopd-redis", "matches no"]),
    ("secret renamed", "deploy/k8s/uopd.yaml",
     "secretName: uopd-cluster-key", "secretName: uopd-cluster-keys",
     ["deploy/k8s/uopd.yaml", "'uopd-cluster-keys'"]),
    ("secret key renamed", "deploy/k8s/uopd.yaml",
     "key: password", "key: passwd", ["deploy/k8s/uopd.yaml", "no key 'passwd'"]),
    ("probe port changed", "deploy/k8s/uopd.yaml",
     "readinessProbe:\n            grpc:\n              port: 50051",
     "readinessProbe:\n            grpc:\n              port: 50052",
     ["deploy/k8s/uopd.yaml", "readinessProbe", "50052"]),
    ("unknown daemon flag", "deploy/k8s/uopd.yaml",
     "--compile_workers=4", "--compile_worker=4",
     ["deploy/k8s/uopd.yaml", "--compile_worker is not a flag"]),
    ("bad duration", "deploy/uopd.flags", "--idle_ttl=30m", "--idle_ttl=30 minutes",
     ["deploy/uopd.flags", "--idle_ttl=30 minutes: not a duration"]),
    ("env var missing", "deploy/k8s/uopd.yaml",
     "redis://:$(REDIS_PASSWORD)@", "redis://:$(REDIS_PASS)@",
     ["deploy/k8s/uopd.yaml", "$(REDIS_PASS)"]),
    ("annotation port", "deploy/k8s/uopd.yaml",
     'prometheus.io/port: "9464"', 'prometheus.io/port: "9465"',
     ["deploy/k8s/uopd.yaml", "prometheus.io/port '9465'"]),
    ("kustomization missing a file", "deploy/k8s/kustomization.yaml",
     "  - service.yaml\n", "", ["deploy/k8s/kustomization.yaml", "service.yaml", "not listed"]),
    ("compose depends_on", "deploy/compose.yaml",
     "    keygen:\n      condition", "    keygem:\n      condition",
     ["deploy/compose.yaml", "'keygem'"]),
    ("compose volume", "deploy/compose.yaml",
     "- cache-b:/var/cache/uopd", "- cache-c:/var/cache/uopd",
     ["deploy/compose.yaml", "'cache-c'"]),
    ("compose bind mount", "deploy/compose.yaml",
     "./prometheus/alerts.yml:", "./prometheus/alert.yml:",
     ["deploy/compose.yaml", "deploy/prometheus/alert.yml does not exist"]),
    ("scrape target", "deploy/prometheus/prometheus.yml",
     "uopd-b:9464", "uopd-c:9464", ["deploy/prometheus/prometheus.yml", "'uopd-c'"]),
    ("scrape port", "deploy/prometheus/prometheus.yml",
     "uopd-b:9464", "uopd-b:9465", ["deploy/prometheus/prometheus.yml", "port 9465"]),
    ("alert metric", "deploy/prometheus/alerts.yml",
     "uopd_cache_errors_total", "uopd_cache_error_total",
     ["deploy/prometheus/alerts.yml", "uopd_cache_error_total"]),
    ("alert label value", "deploy/prometheus/alerts.yml",
     'event="crashed"', 'event="crash"', ["deploy/prometheus/alerts.yml", "'crash'"]),
    ("Dockerfile EXPOSE", "deploy/Dockerfile",
     "EXPOSE 50051 9464", "EXPOSE 50051 9465", ["deploy/Dockerfile", "EXPOSE 9465 50051"]),
    ("Dockerfile USER", "deploy/Dockerfile",
     "USER 10001:10001", "USER root", ["deploy/Dockerfile", "USER root"]),
    ("Dockerfile COPY", "deploy/Dockerfile",
     "COPY scripts/install-deps.sh", "COPY scripts/install_deps.sh",
     ["deploy/Dockerfile", "scripts/install_deps.sh"]),
    ("YAML syntax", "deploy/k8s/namespace.yaml",
     "metadata:\n  name: uopd", "metadata:\n  name: [uopd", ["deploy/k8s/namespace.yaml", "parse"]),
]


def self_test(root):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        pristine = os.path.join(tmp, "pristine")
        os.makedirs(os.path.join(pristine, "server"))
        shutil.copytree(os.path.join(root, "deploy"), os.path.join(pristine, "deploy"))
        for f in ("server/daemon_config.cc", "server/metrics.cc"):
            shutil.copy(os.path.join(root, f), os.path.join(pristine, f))
        if os.path.isdir(os.path.join(root, "scripts")):
            shutil.copytree(os.path.join(root, "scripts"), os.path.join(pristine, "scripts"))
        _, errors = check(pristine, quiet=True)
        if errors:
            failures.append("the unmodified copy does not pass: " + "; ".join(errors))
        for i, (what, rel, old, new, expected) in enumerate(MUTATIONS):
            work = os.path.join(tmp, f"m{i}")
            shutil.copytree(pristine, work)
            path = os.path.join(work, rel)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if old not in text:
                failures.append(f"{what}: {rel} no longer contains {old!r} (update MUTATIONS)")
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new, 1))
            _, errors = check(work, quiet=True)
            hit = [e for e in errors if all(x in e for x in expected)]
            if hit:
                print(f"ok: {what}: {hit[0]}")
            else:
                failures.append(f"{what}: no error naming {expected}; got: {errors or 'none'}")
    for f in failures:
        print(f"SELF-TEST FAILED: {f}")
    if failures:
        print(f"self-test: {len(failures)} failure(s)")
        return 1
    print(f"self-test: the unmodified copy passes; all {len(MUTATIONS)} broken references are "
          f"reported")
    return 0


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1 or any(a not in ("--self-test",) for a in argv[1:] if a.startswith("--")):
        print(__doc__)
        return 2
    root = args[0]
    if "--self-test" in argv:
        return self_test(root)
    checker, errors = check(root)
    files = len(checker.docs)
    if errors:
        print(f"check_manifests: {len(errors)} broken reference(s) in {root}/deploy")
        return 1
    print(f"check_manifests: {files} YAML files and deploy/Dockerfile consistent "
          f"({len(checker.warnings)} warning(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
