"""deploy/Dockerfile: copied files, EXPOSE, USER and the uid the manifests run as."""

import os
import re

import yaml


class DockerfileChecks:
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
