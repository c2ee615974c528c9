"""What every check of deploy/ shares: the daemon's flags and metrics, the loaded files, and how
errors are reported."""

import os
import re

import yaml

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



class CheckerBase:
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
