"""deploy/prometheus/: scrape targets, rule files and alert expressions."""

import os
import re

from manifest_checks.common import METRICS, TARGET_LABELS


class PrometheusChecks:
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
