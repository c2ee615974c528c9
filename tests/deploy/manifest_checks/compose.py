"""deploy/compose.yaml: services, volumes, mounts and ports."""

import os

from manifest_checks.common import PATH_FLAGS


class ComposeChecks:
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
