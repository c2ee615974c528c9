#include "server/daemon_config.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/local_socket.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC address (HOST:PORT; port 0 picks a free one)");
ABSL_FLAG(std::string, metrics, "127.0.0.1:9464",
          "Prometheus endpoint address (HOST:PORT), '' to disable");
ABSL_FLAG(std::string, cache_dir, "",
          "disk cache directory ('' = $XDG_CACHE_HOME/uopd or ~/.cache/uopd)");
ABSL_FLAG(std::string, cache_secret, "",
          "the file holding this daemon's own secret, which authenticates disk cache entries "
          "when there is no --cluster_key_file (with one, entries are signed with the cluster key "
          "and those signed with this file still accepted): outside --cache_dir, made (mode 600, "
          "32 random bytes) if missing ('' = <cache_dir>.secret, beside the folder)");
ABSL_FLAG(int64_t, memory_cache_bytes, int64_t{256} << 20, "memory cache tier bound, bytes");
ABSL_FLAG(int64_t, disk_cache_bytes, int64_t{4} << 30,
          "disk cache tier bound, bytes (0 disables the tier)");
ABSL_FLAG(std::string, cluster_key_file, "",
          "the cluster's shared secret (32+ bytes, mode 600): signs cache entries shared between "
          "workers; CacheService.Put accepts only entries signed with it");
ABSL_FLAG(std::string, local_socket, "auto",
          "the local socket, the hot calls (RunPlan, Execute, small buffer calls) without gRPC for "
          "clients on this machine: a path, 'auto' (beside "
          "a unix:/path --listen socket, as PATH.local; with a loopback TCP --listen, "
          "$XDG_RUNTIME_DIR/uopd-PID.local or /tmp/uopd-UID/uopd-PID.local; none with another "
          "TCP --listen) or '' (none); it gets --unix_socket_mode");
ABSL_FLAG(int64_t, local_socket_spin_us, 200,
          "after answering a local-socket client that calls back to back, poll this many "
          "microseconds for its next call before sleeping (at most half the cores poll at once; "
          "0: never)");
ABSL_FLAG(absl::Duration, local_socket_idle_timeout, absl::Minutes(10),
          "a local-socket connection with no call for this long is closed (clients open a new "
          "one at their next call); 0: never");
ABSL_FLAG(std::string, unix_socket_mode, "0600",
          "permissions of a unix:/path socket (octal): who on this machine may connect; 0660 "
          "lets the socket's group in");
ABSL_FLAG(std::string, redis_url, "",
          "the cluster's shared cache tier: redis://[user:password@]host[:port][/db] "
          "(needs --cluster_key_file; a password here is visible in `ps`: prefer a flag file)");
ABSL_FLAG(std::string, redis_password_file, "",
          "Redis password from this file (mode 600; trailing whitespace ignored) instead of the "
          "URL, where every local user can read it in `ps`");
ABSL_FLAG(std::string, redis_prefix, "uopd:",
          "namespace of this cluster's keys in Redis (clusters or versions sharing one Redis)");
ABSL_FLAG(absl::Duration, redis_ttl, absl::Hours(24 * 7),
          "entries published to Redis expire after this long (0: never)");
ABSL_FLAG(absl::Duration, redis_connect_timeout, absl::Milliseconds(250),
          "longest wait to connect to Redis");
ABSL_FLAG(absl::Duration, redis_command_timeout, absl::Seconds(1),
          "longest wait for one Redis command (a lookup adds at most this to a request)");
ABSL_FLAG(absl::Duration, redis_retry_after, absl::Seconds(10),
          "after 3 failed Redis calls in a row, how long to serve from local tiers only before "
          "trying Redis again");
ABSL_FLAG(bool, allow_client_source, false,
          "compile client-rendered source (RenderedSource): lets clients run arbitrary code and "
          "read files on this host");
ABSL_FLAG(int32_t, compile_workers, 0,
          "sandboxed compiler processes (0 = one per core, at most 8)");
ABSL_FLAG(absl::Duration, compile_timeout, absl::Seconds(120), "longest one compile may take");
ABSL_FLAG(int32_t, compile_nice, 0,
          "added to the nice value of the compile workers and the daemon's compile threads "
          "(optimize, search, render): compiles then take the CPU the daemon's short calls "
          "(Execute, cache hits, copies) leave, and wait longer on a busy daemon (0: the "
          "daemon's priority)");
ABSL_FLAG(absl::Duration, compile_demote_after, absl::Milliseconds(250),
          "compile work (a worker's compile, the daemon's optimize and render) still running "
          "after this long is made --compile_demote_nice nicer, so a kernel that takes seconds "
          "to compile takes the CPU other calls leave (0: never)");
ABSL_FLAG(int32_t, compile_demote_nice, 10, "how much nicer demoted compile work runs");
ABSL_FLAG(bool, tensor_cores, true,
          "GPU matmuls of half, bfloat16 or fp8 may use tensor cores (the TC opt: the "
          "heuristics' first choice, the search's, a client's opts); false: never, as "
          "tinygrad's TC=0, and a TC opt is refused as on a GPU without them");
ABSL_FLAG(int64_t, large_kernel_nodes, 4096,
          "requests whose kernel ASTs hold more nodes than this in all (real kernels hold tens "
          "to hundreds) are decoded, optimized, rendered and compiled at most "
          "--large_kernel_slots at a time, taken in turn by identity");
ABSL_FLAG(int32_t, large_kernel_slots, 0,
          "how many requests with large kernels are worked on at once (0 = half the cores, at "
          "least 1)");
ABSL_FLAG(int64_t, compile_memory_bytes, 0,
          "address space of a compile worker (0 = a quarter of the host's memory, 1-8 GiB)");
ABSL_FLAG(int64_t, max_object_bytes, int64_t{64} << 20, "largest compiled kernel, bytes");
ABSL_FLAG(bool, compile_in_process, false,
          "compile inside the daemon instead of sandboxed workers (no isolation: debugging only)");
ABSL_FLAG(int32_t, threads, 0, "worker threads for kernels (0 = one per core)");
ABSL_FLAG(absl::Duration, idle_ttl, absl::Minutes(30), "reclaim buffers and plans idle this long");
ABSL_FLAG(int64_t, max_buffer_bytes, 0,
          "largest buffer a client may create, bytes (0 = a quarter of the host's memory)");
ABSL_FLAG(int64_t, max_client_bytes, 0,
          "memory of one identity (anonymous: of one source host): buffers, inline buffers and "
          "plans until freed, bytes (0 = a quarter of the host's memory)");
ABSL_FLAG(int64_t, max_total_bytes, 0,
          "memory of all clients together, bytes (0 = three quarters of the host's memory)");
ABSL_FLAG(int64_t, max_sessions_per_client, 256,
          "sessions (OpenSession) one identity (anonymous: one source host) may have open");
ABSL_FLAG(int64_t, max_sessions, 4096, "sessions all clients together may have open");
ABSL_FLAG(
    int64_t, max_calls_per_client, 64,
    "gRPC calls one client (token identity or anonymous host) may have in flight (0: no bound)");
ABSL_FLAG(int32_t, max_rpc_threads, 512,
          "threads serving gRPC calls, all clients together; a call past them is refused");
ABSL_FLAG(int32_t, max_streams_per_connection, 128,
          "concurrent calls on one HTTP/2 connection (gRPC's max_concurrent_streams)");
ABSL_FLAG(
    absl::Duration, stream_idle_timeout, absl::Seconds(60),
    "a WriteBuffer or ReadBuffer stream that moves no chunk this long is cancelled (0: never)");
ABSL_FLAG(absl::Duration, keepalive, absl::Minutes(5),
          "ping a connection that has calls open (sessions) after this long without traffic; one "
          "whose peer does not answer within 20 s is closed, ending its calls and sessions (a "
          "client stopped this long counts as gone; 0: gRPC's default, 2 hours)");
ABSL_FLAG(std::string, identities, "",
          "identity file: NAME RIGHTS token:TOKEN|sha256:HEX|x509:COMMON_NAME per line");
ABSL_FLAG(std::string, anonymous_rights, "",
          "rights of callers without a credential ('' = compile,run without --identities, "
          "none with it; 'none', or a list of compile,run,cache_read,cache_write,"
          "client_source,admin)");
ABSL_FLAG(std::string, tls_cert, "", "TLS: the server's certificate chain (PEM)");
ABSL_FLAG(std::string, tls_key, "", "TLS: the server's private key (PEM)");
ABSL_FLAG(std::string, tls_client_ca, "",
          "TLS: require client certificates signed by this CA (PEM)");
ABSL_FLAG(int64_t, max_nodes, 200'000, "largest kernel AST, nodes");
ABSL_FLAG(int64_t, max_depth, 20'000, "longest source chain in a kernel AST");
ABSL_FLAG(int64_t, max_buffer_elements, int64_t{1} << 34,
          "largest buffer a kernel may declare, elements");
ABSL_FLAG(std::string, optimization, "heuristic",
          "how kernels are optimized when a request does not say: heuristic, search or none");
ABSL_FLAG(absl::Duration, search_budget, absl::Seconds(30),
          "longest a search for one kernel may take (also at most half the call's deadline)");
ABSL_FLAG(int64_t, search_scratch_bytes, int64_t{1} << 30,
          "device memory one search may use for made-up inputs; bigger kernels get heuristics");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");
ABSL_FLAG(bool, check_lock_order, false,
          "check the lock order of every mutex acquisition and abort on a potential deadlock "
          "(for tests: it serializes every lock of the daemon through one global graph)");
ABSL_FLAG(std::string, port_file, "",
          "write the bound gRPC and metrics addresses here once serving");

namespace uopd {
namespace {

std::string DefaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/uopd");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/uopd");
  }
  return "/tmp/uopd-cache";
}

int64_t DefaultCompileMemory() {
  const int64_t host = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  return std::clamp(host / 4, int64_t{1} << 30, int64_t{8} << 30);
}

int Cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// "0660" -> 0660: permission bits only.
bool ParseOctalMode(const std::string& text, int* mode) {
  if (text.empty() || text.size() > 4) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return false;
    value = value * 8 + (c - '0');
  }
  *mode = value;
  return true;
}

// The local socket's path from --local_socket: "auto" puts it beside a unix --listen socket,
// and in a directory only this user can enter for a loopback TCP one (named by the process, as
// the port may not be known yet), so that `make serve`'s clients on this machine get it too.
// Absolute, as clients get it from OpenLocalChannel and need not share the daemon's directory.
std::string LocalSocketPath(const std::string& flag, const std::string& listen) {
  std::string path = flag;
  if (flag == "auto" && absl::StartsWith(listen, "unix:")) {
    path = UnixSocketPath(listen) + ".local";
  } else if (flag == "auto") {
    if (!IsLocalAddress(listen)) return "";
    absl::StatusOr<std::string> dir = PrivateSocketDir();  // absolute
    if (!dir.ok()) {
      Log(LogLevel::kWarning, "no local socket: no private directory for it",
          {{"error", std::string(dir.status().message())}});
      return "";
    }
    return absl::StrCat(*dir, "/uopd-", getpid(), ".local");
  }
  if (path.empty() || path[0] == '/') return path;
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.string();
}

absl::Status NetworkFromFlags(DaemonConfig::Network& n) {
  n.listen = absl::GetFlag(FLAGS_listen);
  n.metrics = absl::GetFlag(FLAGS_metrics);
  n.local_socket_path = LocalSocketPath(absl::GetFlag(FLAGS_local_socket), n.listen);
  if ((absl::StartsWith(n.listen, "unix:") || !n.local_socket_path.empty()) &&
      !ParseOctalMode(absl::GetFlag(FLAGS_unix_socket_mode), &n.socket_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--unix_socket_mode must be octal (e.g. 0600), not '",
                     absl::GetFlag(FLAGS_unix_socket_mode), "'"));
  }
  n.local_socket_idle_timeout =
      std::max(absl::ZeroDuration(), absl::GetFlag(FLAGS_local_socket_idle_timeout));
  n.local_socket_spin =
      absl::Microseconds(std::max<int64_t>(0, absl::GetFlag(FLAGS_local_socket_spin_us)));
  n.keepalive = absl::GetFlag(FLAGS_keepalive);
  n.max_rpc_threads = std::max(8, absl::GetFlag(FLAGS_max_rpc_threads));
  n.max_streams_per_connection = std::max(1, absl::GetFlag(FLAGS_max_streams_per_connection));
  n.stream_idle_timeout = absl::GetFlag(FLAGS_stream_idle_timeout);
  n.max_calls_per_client = absl::GetFlag(FLAGS_max_calls_per_client);
  n.port_file = absl::GetFlag(FLAGS_port_file);
  return absl::OkStatus();
}

DaemonConfig::Cache CacheFromFlags() {
  DaemonConfig::Cache c;
  c.memory_bytes = absl::GetFlag(FLAGS_memory_cache_bytes);
  c.disk_bytes = absl::GetFlag(FLAGS_disk_cache_bytes);
  c.dir = absl::GetFlag(FLAGS_cache_dir);
  if (c.dir.empty()) c.dir = DefaultCacheDir();
  c.secret_file = absl::GetFlag(FLAGS_cache_secret);
  c.cluster_key_file = absl::GetFlag(FLAGS_cluster_key_file);
  c.redis_url = absl::GetFlag(FLAGS_redis_url);
  c.redis_password_file = absl::GetFlag(FLAGS_redis_password_file);
  c.redis_prefix = absl::GetFlag(FLAGS_redis_prefix);
  c.redis_ttl = absl::GetFlag(FLAGS_redis_ttl);
  c.redis_connect_timeout = absl::GetFlag(FLAGS_redis_connect_timeout);
  c.redis_command_timeout = absl::GetFlag(FLAGS_redis_command_timeout);
  c.redis_retry_after = absl::GetFlag(FLAGS_redis_retry_after);
  return c;
}

DaemonConfig::Compile CompileFromFlags() {
  DaemonConfig::Compile c;
  c.in_process = absl::GetFlag(FLAGS_compile_in_process);
  c.workers = absl::GetFlag(FLAGS_compile_workers);
  if (c.workers <= 0) c.workers = std::min(8, Cores());
  c.timeout = absl::GetFlag(FLAGS_compile_timeout);
  c.priority = CompilePriority{.nice = absl::GetFlag(FLAGS_compile_nice),
                               .demote_after = absl::GetFlag(FLAGS_compile_demote_after),
                               .demoted_nice = absl::GetFlag(FLAGS_compile_demote_nice)};
  c.memory_bytes = absl::GetFlag(FLAGS_compile_memory_bytes);
  if (c.memory_bytes <= 0) c.memory_bytes = DefaultCompileMemory();
  c.max_object_bytes = absl::GetFlag(FLAGS_max_object_bytes);
  c.large_kernel_nodes = absl::GetFlag(FLAGS_large_kernel_nodes);
  c.large_kernel_slots = absl::GetFlag(FLAGS_large_kernel_slots);
  c.tensor_cores = absl::GetFlag(FLAGS_tensor_cores);
  if (c.large_kernel_slots <= 0) c.large_kernel_slots = std::max(1, Cores() / 2);
  c.allow_client_source = absl::GetFlag(FLAGS_allow_client_source);
  return c;
}

DaemonConfig::Limits LimitsFromFlags() {
  DaemonConfig::Limits l;
  l.ir.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  l.ir.max_depth = absl::GetFlag(FLAGS_max_depth);
  l.ir.max_buffer_elements = absl::GetFlag(FLAGS_max_buffer_elements);
  l.idle_ttl = absl::GetFlag(FLAGS_idle_ttl);
  l.max_buffer_bytes = absl::GetFlag(FLAGS_max_buffer_bytes);
  l.max_client_bytes = absl::GetFlag(FLAGS_max_client_bytes);
  l.max_total_bytes = absl::GetFlag(FLAGS_max_total_bytes);
  l.max_sessions_per_client = std::max<int64_t>(0, absl::GetFlag(FLAGS_max_sessions_per_client));
  l.max_sessions = std::max<int64_t>(0, absl::GetFlag(FLAGS_max_sessions));
  return l;
}

DaemonConfig::Security SecurityFromFlags() {
  DaemonConfig::Security s;
  s.identities_file = absl::GetFlag(FLAGS_identities);
  s.anonymous_rights = absl::GetFlag(FLAGS_anonymous_rights);
  if (s.anonymous_rights.empty()) {
    s.anonymous_rights = s.identities_file.empty() ? "compile,run" : "none";
  }
  s.tls = TlsFiles{absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                   absl::GetFlag(FLAGS_tls_client_ca)};
  return s;
}

}  // namespace

absl::StatusOr<DaemonConfig> DaemonConfigFromFlags() {
  DaemonConfig config;
  if (absl::Status network = NetworkFromFlags(config.network); !network.ok()) return network;
  config.cache = CacheFromFlags();
  config.compile = CompileFromFlags();
  config.limits = LimitsFromFlags();
  config.security = SecurityFromFlags();
  if (const std::string mode = absl::GetFlag(FLAGS_optimization); mode == "search") {
    config.optimization = OptMode::kSearch;
  } else if (mode == "none") {
    config.optimization = OptMode::kNone;
  } else if (mode != "heuristic") {
    return absl::InvalidArgumentError(
        absl::StrCat("--optimization must be heuristic, search or none, not '", mode, "'"));
  }
  config.search.budget = absl::GetFlag(FLAGS_search_budget);
  config.search.max_scratch_bytes = absl::GetFlag(FLAGS_search_scratch_bytes);
  config.threads = absl::GetFlag(FLAGS_threads);
  if (config.threads <= 0) config.threads = Cores();
  if (!ParseLogLevel(absl::GetFlag(FLAGS_log_level), &config.log_level)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_level must be debug, info, warning or error, not '",
                     absl::GetFlag(FLAGS_log_level), "'"));
  }
  config.check_lock_order = absl::GetFlag(FLAGS_check_lock_order);
  return config;
}

}  // namespace uopd
