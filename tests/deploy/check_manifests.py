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

import os
import shutil
import sys
import tempfile

try:
    import yaml  # noqa: F401 (the checks need it)
except ImportError:  # pragma: no cover
    print("check_manifests: SKIP: PyYAML is not installed (Debian: apt-get install python3-yaml)")
    sys.exit(77)

from manifest_checks.common import CheckerBase
from manifest_checks.compose import ComposeChecks
from manifest_checks.dockerfile import DockerfileChecks
from manifest_checks.k8s import K8sChecks
from manifest_checks.prometheus import PrometheusChecks


class Checker(CheckerBase, K8sChecks, ComposeChecks, PrometheusChecks, DockerfileChecks):
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
