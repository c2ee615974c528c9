// uopd: the kernel compilation and execution daemon.
//
//   uopd [--listen=127.0.0.1:50051] [--metrics=127.0.0.1:9464] [--cache_dir=DIR] ...
//   uopd --flagfile=uopd.flags      (a config file: one --flag=value per line)
//
// Registers the devices of this machine, opens the compiled-byte cache, and serves
// KernelService, CacheService, grpc.health.v1.Health and server reflection until SIGTERM or
// SIGINT, which drain in-flight RPCs before exiting.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "backends/cpu/cpu_device.h"
#ifdef UOPD_WITH_CUDA
#include "backends/cuda/cuda_device.h"
#endif
#include "core/cache/caching_program_source.h"
#include "core/cache/disk_tier.h"
#include "core/cache/entry_signature.h"
#include "core/cache/memory_tier.h"
#include "core/cache/redis_tier.h"
#include "core/util/fair_share.h"
#include "core/util/large_stack.h"
#include "core/util/log.h"
#include "core/worker/compile_worker_pool.h"
#include "core/worker/sandboxed_compiler.h"
#include "google/protobuf/stubs/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "server/accept_guard.h"
#include "server/authenticator.h"
#include "server/cache_service.h"
#include "server/call_limiter.h"
#include "server/compile_worker_main.h"
#include "server/kernel_service.h"
#include "server/local_socket.h"
#include "server/malformed_request_interceptor.h"
#include "server/metrics.h"
#include "server/transport_credentials.h"

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

// The secrets DiskTier::Open authenticates entries with: the cluster key when there is one (so
// workers of a cluster may share a folder), else this daemon's own secret file, made on first
// start. The file must live outside the folder: whoever can write the folder must not be able to
// read or replace it. A worker given the cluster key keeps accepting what it wrote under its
// own file before. FAILED_PRECONDITION when the file cannot be made (the disk tier is left out,
// as for an unwritable folder), INVALID_ARGUMENT for a file that must not be used.
absl::StatusOr<std::vector<std::string>> DiskCacheSecrets(const std::string& cache_dir,
                                                          const std::string& cluster_key) {
  namespace fs = std::filesystem;
  std::string dir = cache_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // "a/" names the folder "a"
  std::string path = absl::GetFlag(FLAGS_cache_secret);
  if (path.empty()) path = dir + ".secret";
  auto resolved = [](const std::string& name) {
    std::error_code ec;
    fs::path real = fs::weakly_canonical(name, ec);  // links resolved, as far as they exist
    return ec || real.empty() ? fs::absolute(name, ec).lexically_normal() : real;
  };
  const fs::path folder = resolved(dir), file = resolved(path);
  if (std::mismatch(folder.begin(), folder.end(), file.begin(), file.end()).first == folder.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the disk cache secret ", path, " is inside --cache_dir ", cache_dir,
                     ": whoever can write the folder could replace it (see --cache_secret)"));
  }
  constexpr absl::string_view kWhat = "the disk cache secret (--cache_secret)";
  if (cluster_key.empty()) {
    auto own = ReadOrCreateSecretFile(path, kWhat);
    if (!own.ok()) return own.status();
    Log(LogLevel::kInfo, "disk cache entries are authenticated with the secret file",
        {{"file", path}});
    return std::vector<std::string>{*std::move(own)};
  }
  std::vector<std::string> secrets = {cluster_key};
  struct stat info;
  if (stat(path.c_str(), &info) == 0) {
    if (auto own = ReadSecretFile(path, kWhat); own.ok() && own->size() >= 32) {
      secrets.push_back(*std::move(own));
    } else {
      Log(LogLevel::kWarning, "disk cache entries signed with the secret file are not accepted",
          {{"file", path},
           {"error", own.ok() ? "shorter than 32 bytes" : own.status().ToString()}});
    }
  }
  return secrets;
}

// "host:port" of `listen` with its port replaced by `port`.
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

// "unix:/run/uopd.sock" or "unix:///run/uopd.sock" -> "/run/uopd.sock".
std::string UnixSocketPath(const std::string& listen) {
  std::string path = listen.substr(5);
  if (absl::StartsWith(path, "//")) path = path.substr(2);
  return path;
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

std::string WithPort(const std::string& listen, int port) {
  if (absl::StartsWith(listen, "unix:")) return listen;
  size_t colon = listen.rfind(':');
  return absl::StrCat(listen.substr(0, colon), ":", port);
}

int64_t DefaultCompileMemory() {
  const int64_t host = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  return std::clamp(host / 4, int64_t{1} << 30, int64_t{8} << 30);
}

// Protobuf logs a line for every client message with a malformed string: client input, not a
// server event, and one a client could flood the log with. Kept, at debug level, as JSON.
void LogProtobufMessage(google::protobuf::LogLevel level, const char* file, int line,
                        const std::string& message) {
  Log(level >= google::protobuf::LOGLEVEL_FATAL ? LogLevel::kError : LogLevel::kDebug, "protobuf",
      {{"message", message}, {"at", absl::StrCat(file, ":", line)}});
}

// Raises the soft limit on open files to the hard one (the systemd unit sets the hard limit),
// then arms the accept guard below it: connections past it are refused, not fatal to gRPC's
// listener (server/accept_guard.h).
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t soft = limit.rlim_cur;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = soft;
  }
  const int refuse_from = ArmAcceptGuard();
  Log(LogLevel::kInfo, "open files",
      {{"limit", absl::StrCat(static_cast<uint64_t>(limit.rlim_cur))},
       {"was", absl::StrCat(static_cast<uint64_t>(soft))},
       {"connections refused from descriptor", absl::StrCat(refuse_from)}});
}

// --optimization and --log_level; false (said on stderr) if either is not one of its words.
bool ParseModeFlags(OptMode* optimization, LogLevel* level) {
  if (const std::string mode = absl::GetFlag(FLAGS_optimization); mode == "search") {
    *optimization = OptMode::kSearch;
  } else if (mode == "none") {
    *optimization = OptMode::kNone;
  } else if (mode != "heuristic") {
    std::fprintf(stderr, "uopd: --optimization must be heuristic, search or none\n");
    return false;
  }
  if (!ParseLogLevel(absl::GetFlag(FLAGS_log_level), level)) {
    std::fprintf(stderr, "uopd: --log_level must be debug, info, warning or error\n");
    return false;
  }
  return true;
}

// The CPU device and, when the CUDA driver is there, one device per GPU, compiling through
// `wrap_compiler`. A failure is logged.
absl::Status AddDevices(DeviceRegistry& devices, ThreadPool* pool,
                        const CompilerWrapper& wrap_compiler) {
  CpuDeviceOptions cpu_options;
  cpu_options.wrap_compiler = wrap_compiler;
  auto cpu = CreateCpuDevice(pool, cpu_options);
  if (!cpu.ok()) {
    Log(LogLevel::kError, "cannot create the CPU device", {{"error", cpu.status().ToString()}});
    return cpu.status();
  }
  devices.Add(std::move(*cpu));
#ifdef UOPD_WITH_CUDA
  if (auto gpus = CreateCudaDevices(wrap_compiler); gpus.ok()) {
    for (auto& gpu : *gpus) devices.Add(std::move(gpu));
  } else {
    Log(LogLevel::kInfo, "no CUDA devices", {{"reason", std::string(gpus.status().message())}});
  }
#else
  Log(LogLevel::kInfo, "no CUDA devices", {{"reason", "built without the CUDA toolkit"}});
#endif
  for (Device* device : devices.devices()) {
    Log(LogLevel::kInfo, "device ready",
        {{"device", device->name()}, {"target", device->compiler().Target()}});
  }

  return absl::OkStatus();
}

// The priority of compile work, for the workers and the daemon's compile threads alike.
CompilePriority CompilePriorityFromFlags() {
  return CompilePriority{.nice = absl::GetFlag(FLAGS_compile_nice),
                         .demote_after = absl::GetFlag(FLAGS_compile_demote_after),
                         .demoted_nice = absl::GetFlag(FLAGS_compile_demote_nice)};
}

// Starts the sandboxed compile workers; null with --compile_in_process. A failure is logged.
absl::StatusOr<std::unique_ptr<CompileWorkerPool>> StartCompileWorkers() {
  if (absl::GetFlag(FLAGS_compile_in_process)) {
    Log(LogLevel::kWarning, "compiling in the daemon's process: a compiler crash ends the daemon");
    return nullptr;
  }
  CompileWorkerPoolOptions options;
  int64_t memory = absl::GetFlag(FLAGS_compile_memory_bytes);
  if (memory <= 0) memory = DefaultCompileMemory();
  options.executable = kCompileWorkerExecutable;
  options.argv = CompileWorkerArgv(memory, absl::GetFlag(FLAGS_max_object_bytes));
  options.workers = absl::GetFlag(FLAGS_compile_workers);
  if (options.workers <= 0) {
    options.workers = std::min(8, static_cast<int>(std::thread::hardware_concurrency()));
  }
  options.compile_timeout = absl::GetFlag(FLAGS_compile_timeout);
  options.priority = CompilePriorityFromFlags();
  options.max_reply_bytes = 2 * absl::GetFlag(FLAGS_max_object_bytes) + (1 << 20);
  auto started = CompileWorkerPool::Start(options);
  if (!started.ok()) {
    Log(LogLevel::kError, "cannot start the compile workers",
        {{"error", started.status().ToString()},
         {"hint", "--compile_in_process runs compilers in the daemon, without isolation"}});
    return started.status();
  }
  Log(LogLevel::kInfo, "compile workers",
      {{"workers", absl::StrCat(options.workers)},
       {"sandbox", (*started)->sandbox()},
       {"memory_limit_mib", absl::StrCat(memory >> 20)}});
  return started;
}

// The cache tiers the flags ask for: memory; disk, left out with a warning when its folder
// cannot be used (a cache is an optimization); Redis. A configuration error is logged.
absl::StatusOr<std::vector<std::unique_ptr<CacheTier>>> CacheTiersFromFlags(
    const std::string& cluster_key) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(absl::GetFlag(FLAGS_memory_cache_bytes)));
  if (absl::GetFlag(FLAGS_disk_cache_bytes) > 0) {
    std::string dir = absl::GetFlag(FLAGS_cache_dir);
    if (dir.empty()) dir = DefaultCacheDir();
    absl::StatusOr<std::vector<std::string>> secrets = DiskCacheSecrets(dir, cluster_key);
    if (!secrets.ok() && !absl::IsFailedPrecondition(secrets.status())) {
      // A secret others can read, or one the folder's writers could replace, authenticates
      // nothing: the operator must fix it, as for the cluster key.
      Log(LogLevel::kError, "cannot use the disk cache secret",
          {{"error", secrets.status().ToString()}});
      return absl::InvalidArgumentError("bad cache configuration");
    }
    absl::StatusOr<std::unique_ptr<DiskTier>> disk =
        secrets.ok() ? DiskTier::Open(dir, absl::GetFlag(FLAGS_disk_cache_bytes), *secrets)
                     : secrets.status();
    if (disk.ok()) {
      Log(LogLevel::kInfo, "disk cache", {{"dir", dir}});
      tiers.push_back(std::move(*disk));
    } else {
      // A cache is an optimization: serve from memory rather than not at all.
      Log(LogLevel::kWarning, "no disk cache: serving with the memory tier only",
          {{"dir", dir}, {"error", disk.status().ToString()}});
    }
  }
  if (const std::string url = absl::GetFlag(FLAGS_redis_url); !url.empty()) {
    auto address = ParseRedisUrl(url);
    if (!address.ok()) {
      Log(LogLevel::kError, "bad --redis_url", {{"error", address.status().ToString()}});
      return absl::InvalidArgumentError("bad cache configuration");
    }
    if (cluster_key.empty()) {
      // Entries in a shared store are code every worker runs: never without signatures.
      Log(LogLevel::kError, "--redis_url needs --cluster_key_file (entries are signed with it)");
      return absl::InvalidArgumentError("bad cache configuration");
    }
    if (const std::string file = absl::GetFlag(FLAGS_redis_password_file); !file.empty()) {
      auto password = ReadSecretFile(file, "the Redis password");
      if (!password.ok()) {
        Log(LogLevel::kError, "bad --redis_password_file",
            {{"error", password.status().ToString()}});
        return absl::InvalidArgumentError("bad cache configuration");
      }
      address->password = *std::move(password);
    }
    RedisTierOptions redis;
    redis.address = *std::move(address);
    redis.cluster_key = cluster_key;
    redis.prefix = absl::GetFlag(FLAGS_redis_prefix);
    redis.ttl = absl::GetFlag(FLAGS_redis_ttl);
    redis.connect_timeout = absl::GetFlag(FLAGS_redis_connect_timeout);
    redis.command_timeout = absl::GetFlag(FLAGS_redis_command_timeout);
    redis.breaker_open = absl::GetFlag(FLAGS_redis_retry_after);
    Log(LogLevel::kInfo, "redis cache tier",
        {{"host", redis.address.host},
         {"port", absl::StrCat(redis.address.port)},
         {"db", absl::StrCat(redis.address.db)},
         {"prefix", redis.prefix}});
    tiers.push_back(std::make_unique<RedisTier>(std::move(redis)));
  }
  return tiers;
}

// Quotas from the host's memory unless the flags give them: no set of clients can take all of
// it.
RegistryLimits RegistryLimitsFromFlags(int64_t host_memory) {
  RegistryLimits limits = RegistryLimits::ForHostMemory(host_memory);
  limits.idle_ttl = absl::GetFlag(FLAGS_idle_ttl);
  if (int64_t v = absl::GetFlag(FLAGS_max_buffer_bytes); v > 0) limits.max_buffer_bytes = v;
  if (int64_t v = absl::GetFlag(FLAGS_max_client_bytes); v > 0) limits.max_identity_bytes = v;
  if (int64_t v = absl::GetFlag(FLAGS_max_total_bytes); v > 0) limits.max_total_bytes = v;
  limits.max_identity_sessions = std::max<int64_t>(0, absl::GetFlag(FLAGS_max_sessions_per_client));
  limits.max_sessions = std::max<int64_t>(0, absl::GetFlag(FLAGS_max_sessions));
  return limits;
}

// Identities and anonymous rights from the flags. A configuration error is logged.
absl::StatusOr<std::unique_ptr<Authenticator>> AuthenticatorFromFlags() {
  AuthConfig auth_config;
  auth_config.identities_file = absl::GetFlag(FLAGS_identities);
  std::string anonymous = absl::GetFlag(FLAGS_anonymous_rights);
  if (anonymous.empty()) anonymous = auth_config.identities_file.empty() ? "compile,run" : "none";
  absl::StatusOr<uint32_t> rights = ParseRights(anonymous);
  if (!rights.ok()) {
    Log(LogLevel::kError, "bad --anonymous_rights", {{"error", rights.status().ToString()}});
    return rights.status();
  }
  auth_config.anonymous_rights = *rights;
  auto auth = Authenticator::Create(auth_config);
  if (!auth.ok()) {
    Log(LogLevel::kError, "cannot load identities", {{"error", auth.status().ToString()}});
  }
  return auth;
}

// Builds and starts the gRPC server on `listen` with `services`; `port` gets the TCP port bound.
// A unix socket is created owner-only, with no moment where others could connect, then given
// `socket_mode`: the file's permissions are who may call. A failure is logged.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(
    const std::string& listen, const std::shared_ptr<grpc::ServerCredentials>& credentials,
    int socket_mode, const std::vector<grpc::Service*>& services, int* port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, credentials, port);
  // Idle request threads poll with this timeout; the default (10 s) is how long a drain can
  // wait on them.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 250);
  // Every synchronous call holds a thread while it lives: past this many gRPC refuses the call
  // (RESOURCE_EXHAUSTED) instead of starting a thread per stream a client opens. One client's
  // share is bounded further by --max_calls_per_client.
  grpc::ResourceQuota thread_quota("uopd-rpc-threads");
  thread_quota.SetMaxThreads(std::max(8, absl::GetFlag(FLAGS_max_rpc_threads)));
  builder.SetResourceQuota(thread_quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             std::max(1, absl::GetFlag(FLAGS_max_streams_per_connection)));
  // A client whose machine vanished (no FIN, no RST) leaves a connection gRPC believes open,
  // and with it the client's sessions and their memory: ping such connections, and close those
  // that do not answer. Pings go out without data in between (a session sends nothing after
  // its first message), so neither the count nor the interval of those may stop them.
  if (const absl::Duration keepalive = absl::GetFlag(FLAGS_keepalive);
      keepalive > absl::ZeroDuration()) {
    const int ms = static_cast<int>(
        std::min<int64_t>(absl::ToInt64Milliseconds(keepalive), std::numeric_limits<int>::max()));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, ms);
  }
  builder.experimental().SetInterceptorCreators(MalformedRequestInterceptors());
  for (grpc::Service* service : services) builder.RegisterService(service);
  const bool unix_socket = absl::StartsWith(listen, "unix:");
  const mode_t old_umask = unix_socket ? umask(0177) : 0;
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (unix_socket) umask(old_umask);
  if (server == nullptr || (*port == 0 && !unix_socket)) {
    Log(LogLevel::kError, "cannot listen", {{"address", listen}});
    return absl::UnavailableError("cannot listen");
  }
  if (unix_socket && chmod(UnixSocketPath(listen).c_str(), socket_mode) != 0) {
    Log(LogLevel::kError, "cannot set the unix socket's mode", {{"path", UnixSocketPath(listen)}});
    return absl::PermissionDeniedError("cannot set the unix socket's mode");
  }
  return server;
}

// Until `stopping`: reclaims resources idle past `idle_ttl`, and hands the memory glibc keeps
// after a burst back to the system. Sleeps in short steps so a drain is not held up.
void ReapIdleUntil(const std::atomic<bool>& stopping, ResourceRegistry& resources,
                   absl::Duration idle_ttl) {
  const absl::Duration period = std::min(absl::Seconds(10), idle_ttl / 4);
  absl::Time next = absl::Now() + period;
  while (!stopping.load()) {
    absl::SleepFor(std::min(period, absl::Milliseconds(200)));
    if (absl::Now() < next) continue;
    next = absl::Now() + period;
    if (int reaped = resources.ReapIdle(absl::Now()); reaped > 0) {
      Log(LogLevel::kInfo, "reclaimed idle resources", {{"count", absl::StrCat(reaped)}});
    }
    // glibc keeps what a burst of large compiles freed in its arenas, resident, for good.
    malloc_trim(0);
  }
}

// The local socket at `path` (none when empty), serving `kernels`' hot calls. A failure is
// logged.
absl::StatusOr<std::unique_ptr<LocalSocket>> StartLocalSocket(const std::string& path, int mode,
                                                              LocalTickets* tickets,
                                                              KernelServiceImpl& kernels) {
  if (path.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<LocalSocket>> started = LocalSocket::Start(
      LocalSocketOptions{
          .path = path,
          .mode = mode,
          .idle_timeout =
              std::max(absl::ZeroDuration(), absl::GetFlag(FLAGS_local_socket_idle_timeout)),
          .spin =
              absl::Microseconds(std::max<int64_t>(0, absl::GetFlag(FLAGS_local_socket_spin_us))),
          .max_spinning = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2))},
      tickets,
      [&kernels](const Identity& who, const v1::LocalCall& call, std::function<bool()> gone) {
        return kernels.ServeLocal(who, call, std::move(gone));
      });
  if (!started.ok()) {
    Log(LogLevel::kError, "cannot open the local socket",
        {{"error", std::string(started.status().message())}});
  }
  return started;
}

// Logs where the daemon serves (warning when anonymous callers beyond this machine have
// rights) and writes --port_file: the gRPC address, then the metrics one.
void AnnounceServing(const std::string& bound, const std::string& metrics_bound,
                     const std::string& local_socket_path, const Authenticator& auth) {
  Log(LogLevel::kInfo, "serving",
      {{"grpc", bound},
       {"metrics", metrics_bound},
       {"local_socket", local_socket_path},
       {"tls", absl::GetFlag(FLAGS_tls_cert).empty() ? "off" : "on"},
       {"identities", absl::StrCat(auth.identities())},
       {"anonymous_rights", RightsToString(auth.anonymous_rights())}});
  if (!IsLocalAddress(absl::GetFlag(FLAGS_listen)) && auth.anonymous_rights() != 0) {
    Log(LogLevel::kWarning,
        "listening beyond this machine with anonymous access: anyone who reaches this port may "
        "use the anonymous rights; give --identities (and TLS) or --anonymous_rights=none",
        {{"grpc", bound}, {"anonymous_rights", RightsToString(auth.anonymous_rights())}});
  }
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    // Written then renamed, so a reader never sees half of it.
    std::string temp = absl::GetFlag(FLAGS_port_file) + ".tmp";
    std::ofstream(temp) << bound << "\n" << metrics_bound << "\n";
    std::rename(temp.c_str(), absl::GetFlag(FLAGS_port_file).c_str());
  }
}

// How long answers already decided get to leave before gRPC stops (DrainOnSignal).
constexpr absl::Duration kAnswersInFlight = absl::Milliseconds(250);

// Waits for SIGTERM or SIGINT, then drains: new calls are refused, those in flight get up to
// 30 s, then gRPC stops a moment later (its own drain would also wait for idle connections to
// close).
void DrainOnSignal(const sigset_t& signals, grpc::Server& server, ServerDrain& drain,
                   LocalSocket* local_socket) {
  int received = 0;
  sigwait(&signals, &received);
  Log(LogLevel::kInfo, "draining", {{"signal", received == SIGTERM ? "SIGTERM" : "SIGINT"}});
  if (grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService()) {
    health->SetServingStatus(false);  // load balancers stop sending calls here
  }
  drain.Start();
  if (!drain.WaitIdle(absl::Seconds(30))) {
    Log(LogLevel::kWarning, "calls still running after 30 s are cancelled");
  }
  if (local_socket != nullptr) local_socket->Stop();
  // A call the drain no longer counts has returned from its handler, but gRPC may not have sent
  // its answer yet (nor the UNAVAILABLE of a call refused a moment ago): Shutdown(now) cancelled
  // those, and a finished Execute reached its client as UNAVAILABLE "Cancelling all calls". So
  // answers get a moment to leave, and Shutdown as long again for the calls it finds running
  // (calls held open, such as sessions, are cancelled then).
  absl::SleepFor(kAnswersInFlight);
  server.Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(kAnswersInFlight));
}

int Run() {
  google::protobuf::SetLogHandler(LogProtobufMessage);
  OptMode default_optimization = OptMode::kHeuristic;
  LogLevel level;
  if (!ParseModeFlags(&default_optimization, &level)) return 2;
  SetLogLevel(level);
  RaiseOpenFileLimit();

  // Signals go to one thread that starts the drain; every other thread has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  int threads = absl::GetFlag(FLAGS_threads);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads - 1);

  // Compilers run in sandboxed worker processes: what a compile does to its process (crash,
  // exhaust memory, loop, read files it is told to) never reaches the daemon.
  SetCompileThreadPriority(CompilePriorityFromFlags());
  absl::StatusOr<std::unique_ptr<CompileWorkerPool>> started_workers = StartCompileWorkers();
  if (!started_workers.ok()) return 1;
  std::unique_ptr<CompileWorkerPool> compile_workers = *std::move(started_workers);
  CompilerWrapper wrap_compiler;
  if (compile_workers != nullptr) wrap_compiler = SandboxIn(compile_workers.get());

  DeviceRegistry devices;
  if (!AddDevices(devices, &pool, wrap_compiler).ok()) return 1;

  std::string cluster_key;
  if (!absl::GetFlag(FLAGS_cluster_key_file).empty()) {
    auto key = ReadClusterKey(absl::GetFlag(FLAGS_cluster_key_file));
    if (!key.ok()) {
      Log(LogLevel::kError, "cannot use the cluster key", {{"error", key.status().ToString()}});
      return 2;
    }
    cluster_key = *std::move(key);
  }
  absl::StatusOr<std::vector<std::unique_ptr<CacheTier>>> tiers = CacheTiersFromFlags(cluster_key);
  if (!tiers.ok()) return 2;
  KernelCache cache(*std::move(tiers));
  SearchOptions search;
  search.budget = absl::GetFlag(FLAGS_search_budget);
  search.max_scratch_bytes = absl::GetFlag(FLAGS_search_scratch_bytes);
  CachingProgramSource programs(cache, 4096, default_optimization, search);

  const RegistryLimits limits = RegistryLimitsFromFlags(devices.devices().front()->memory_bytes());
  ResourceRegistry resources(limits);

  absl::StatusOr<std::unique_ptr<Authenticator>> auth = AuthenticatorFromFlags();
  if (!auth.ok()) return 2;
  auto credentials =
      ServerCredentialsFor(TlsFiles{absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                                    absl::GetFlag(FLAGS_tls_client_ca)});
  if (!credentials.ok()) {
    Log(LogLevel::kError, "cannot set up TLS", {{"error", credentials.status().ToString()}});
    return 2;
  }

  std::unique_ptr<Metrics> metrics;
  if (!absl::GetFlag(FLAGS_metrics).empty()) {
    auto started = Metrics::Start(absl::GetFlag(FLAGS_metrics),
                                  MetricsSources{devices, cache, resources, compile_workers.get()});
    if (!started.ok()) {
      Log(LogLevel::kError, "cannot start the metrics endpoint",
          {{"error", started.status().ToString()}});
      return 1;
    }
    metrics = std::move(*started);
  }

  IrLimits ir_limits;
  ir_limits.max_nodes = absl::GetFlag(FLAGS_max_nodes);
  ir_limits.max_depth = absl::GetFlag(FLAGS_max_depth);
  ir_limits.max_buffer_elements = absl::GetFlag(FLAGS_max_buffer_elements);
  TargetCompilers target_compilers =
      [wrap_compiler](const std::string& base,
                      const std::string& target) -> absl::StatusOr<CompilerPair> {
#ifdef UOPD_WITH_CUDA
    if (base == "CUDA") return CreateCudaCompilerPair(target, wrap_compiler);
#endif
    return absl::FailedPreconditionError(
        absl::StrCat("this server cannot compile for ", base, " target ", target));
  };
  RunWatchdog watchdog;
  ServerDrain drain;
  KernelAstMemo asts;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  const std::string local_socket_path = LocalSocketPath(absl::GetFlag(FLAGS_local_socket), listen);
  LocalTickets local_tickets;
  CallLimiter calls(absl::GetFlag(FLAGS_max_calls_per_client));
  int large_kernel_slots = absl::GetFlag(FLAGS_large_kernel_slots);
  if (large_kernel_slots <= 0) {
    large_kernel_slots = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2));
  }
  FairShare large_kernels(large_kernel_slots);
  ServiceContext service_context{
      .devices = devices,
      .programs = programs,
      .resources = resources,
      .pool = &pool,
      .metrics = metrics.get(),
      .limits = ir_limits,
      .target_compilers = target_compilers,
      .watchdog = &watchdog,
      .drain = &drain,
      .allow_client_source = absl::GetFlag(FLAGS_allow_client_source),
      .auth = auth->get(),
      .asts = &asts,
      .local_tickets = local_socket_path.empty() ? nullptr : &local_tickets,
      .local_socket_path = local_socket_path,
      .calls = &calls,
      .stream_idle_timeout = absl::GetFlag(FLAGS_stream_idle_timeout),
      .large_kernels = &large_kernels,
      .large_kernel_nodes = absl::GetFlag(FLAGS_large_kernel_nodes)};
  KernelServiceImpl kernel_service(service_context);
  CacheServiceImpl cache_service(cache, RpcEnv{metrics.get(), &drain, auth->get(), &calls},
                                 cluster_key);

  const bool unix_socket = absl::StartsWith(listen, "unix:");
  int socket_mode = 0600;
  if ((unix_socket || !local_socket_path.empty()) &&
      !ParseOctalMode(absl::GetFlag(FLAGS_unix_socket_mode), &socket_mode)) {
    Log(LogLevel::kError, "bad --unix_socket_mode (octal, e.g. 0600)",
        {{"value", absl::GetFlag(FLAGS_unix_socket_mode)}});
    return 2;
  }
  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> started_server =
      StartGrpcServer(listen, *credentials, socket_mode, {&kernel_service, &cache_service}, &port);
  if (!started_server.ok()) return 1;
  std::unique_ptr<grpc::Server> server = *std::move(started_server);
  absl::StatusOr<std::unique_ptr<LocalSocket>> local_socket =
      StartLocalSocket(local_socket_path, socket_mode, &local_tickets, kernel_service);
  if (!local_socket.ok()) return 1;
  AnnounceServing(WithPort(listen, port),
                  metrics ? WithPort(absl::GetFlag(FLAGS_metrics), metrics->port()) : "",
                  local_socket_path, **auth);

  std::thread signal_thread([&] { DrainOnSignal(signals, *server, drain, local_socket->get()); });
  std::atomic<bool> stopping{false};
  std::thread reaper([&] { ReapIdleUntil(stopping, resources, limits.idle_ttl); });
  server->Wait();
  stopping.store(true);
  reaper.join();
  signal_thread.join();
  Log(LogLevel::kInfo, "stopped");
  // The metrics endpoint's HTTP server takes over a second to stop, and the process is about
  // to exit: leave it to the OS.
  (void)metrics.release();
  return 0;
}

}  // namespace
}  // namespace uopd

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == uopd::kCompileWorkerCommand) {
    return uopd::CompileWorkerMain(argc, argv);
  }
  absl::SetProgramUsageMessage("uopd: kernel compilation and execution daemon");
  absl::ParseCommandLine(argc, argv);
  int rc = uopd::Run();
  // Everything the daemon owns was shut down and freed in Run(). What is left are library
  // singletons whose exit-time teardown (gRPC's in particular) takes over a second and
  // serves no purpose in a process that is exiting: skip it.
  std::fflush(nullptr);
  std::_Exit(rc);
}
