// DaemonConfig: everything the daemon is told when it starts, read once from its flags (or a
// --flagfile) and checked, so the steps that build the daemon (server/main.cc) take values, and
// a bad setting is refused before anything starts, naming the flag.
#ifndef UOPD_SERVER_DAEMON_CONFIG_H_
#define UOPD_SERVER_DAEMON_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/ir/limits.h"
#include "core/opt/optimize.h"
#include "core/search/kernel_search.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "server/transport_credentials.h"

namespace uopd {

struct DaemonConfig {
  struct Network {
    std::string listen;             // gRPC: HOST:PORT or unix:PATH
    std::string metrics;            // Prometheus HOST:PORT; "" = none
    std::string local_socket_path;  // absolute; "" = none (resolved from --local_socket)
    int socket_mode = 0600;         // unix sockets' permission bits: who may call
    absl::Duration local_socket_idle_timeout;
    absl::Duration local_socket_spin;
    absl::Duration keepalive;  // 0: gRPC's default
    int max_rpc_threads = 512;
    int max_streams_per_connection = 128;
    absl::Duration stream_idle_timeout;
    int64_t max_calls_per_client = 64;
    std::string port_file;  // "" = none
  };
  struct Cache {
    int64_t memory_bytes = 0;
    int64_t disk_bytes = 0;   // 0 = no disk tier
    std::string dir;          // resolved: $XDG_CACHE_HOME/uopd, ~/.cache/uopd, ...
    std::string secret_file;  // "" = beside the folder (DIR.secret)
    std::string cluster_key_file;
    std::string redis_url;  // "" = no Redis tier
    std::string redis_password_file;
    std::string redis_prefix;
    absl::Duration redis_ttl, redis_connect_timeout, redis_command_timeout, redis_retry_after;
  };
  struct Compile {
    bool in_process = false;  // no sandboxed workers
    int workers = 1;          // resolved: min(8, cores) unless given
    absl::Duration timeout;
    CompilePriority priority;
    int64_t memory_bytes = 0;  // per worker; resolved: a quarter of the host, 1-8 GiB
    int64_t max_object_bytes = 0;
    int64_t large_kernel_nodes = 0;
    int large_kernel_slots = 1;  // resolved: half the cores unless given
    bool allow_client_source = false;
    bool tensor_cores = true;  // the TC opt on GPUs that have them
  };
  struct Limits {
    IrLimits ir;
    absl::Duration idle_ttl;
    int64_t max_buffer_bytes = 0;  // 0 = from the host's memory (RegistryLimits)
    int64_t max_client_bytes = 0;
    int64_t max_total_bytes = 0;
    int64_t max_sessions_per_client = 0;
    int64_t max_sessions = 0;
  };
  struct Security {
    std::string identities_file;
    std::string anonymous_rights;  // resolved: "compile,run" without identities, else "none"
    TlsFiles tls;
  };

  Network network;
  Cache cache;
  Compile compile;
  Limits limits;
  Security security;
  OptMode optimization = OptMode::kHeuristic;
  SearchOptions search;
  int threads = 1;  // kernel threads; resolved: one per core unless given
  LogLevel log_level = LogLevel::kInfo;
  // Abseil's lock-order checks on every absl::Mutex acquisition (a process-wide graph under one
  // lock: Debian builds abseil without NDEBUG, so they would be on); the tests' daemons turn
  // them on, production leaves them off.
  bool check_lock_order = false;
};

// The configuration the command line gave. INVALID_ARGUMENT naming the flag for a value that is
// not one of its words or forms (--optimization, --log_level, --unix_socket_mode).
absl::StatusOr<DaemonConfig> DaemonConfigFromFlags();

}  // namespace uopd

#endif  // UOPD_SERVER_DAEMON_CONFIG_H_
