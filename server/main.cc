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
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "backends/cpu/cpu_device.h"
#ifdef UOPD_WITH_CUDA
#include "backends/cuda/cuda_device.h"
#endif
#include "core/cache/disk_tier.h"
#include "core/cache/entry_signature.h"
#include "core/cache/memory_tier.h"
#include "core/cache/redis_tier.h"
#include "core/opt/opt_target.h"
#include "core/program/caching_program_source.h"
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
#include "server/daemon_config.h"
#include "server/kernel_service.h"
#include "server/local_socket.h"
#include "server/malformed_request_interceptor.h"
#include "server/metrics.h"
#include "server/transport_credentials.h"

namespace uopd {
namespace {

// The secrets DiskTier::Open authenticates entries with: the cluster key when there is one (so
// workers of a cluster may share a folder), else this daemon's own secret file, made on first
// start. The file must live outside the folder: whoever can write the folder must not be able to
// read or replace it. A worker given the cluster key keeps accepting what it wrote under its
// own file before. FAILED_PRECONDITION when the file cannot be made (the disk tier is left out,
// as for an unwritable folder), INVALID_ARGUMENT for a file that must not be used.
absl::StatusOr<std::vector<std::string>> DiskCacheSecrets(const DaemonConfig::Cache& config,
                                                          const std::string& cluster_key) {
  const std::string& cache_dir = config.dir;
  namespace fs = std::filesystem;
  std::string dir = cache_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // "a/" names the folder "a"
  std::string path = config.secret_file;
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
std::string WithPort(const std::string& listen, int port) {
  if (absl::StartsWith(listen, "unix:")) return listen;
  size_t colon = listen.rfind(':');
  return absl::StrCat(listen.substr(0, colon), ":", port);
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

// Starts the sandboxed compile workers; null with --compile_in_process. A failure is logged.
absl::StatusOr<std::unique_ptr<CompileWorkerPool>> StartCompileWorkers(
    const DaemonConfig::Compile& config) {
  if (config.in_process) {
    Log(LogLevel::kWarning, "compiling in the daemon's process: a compiler crash ends the daemon");
    return nullptr;
  }
  CompileWorkerPoolOptions options;
  const int64_t memory = config.memory_bytes;
  options.executable = kCompileWorkerExecutable;
  options.argv = CompileWorkerArgv(memory, config.max_object_bytes);
  options.workers = config.workers;
  options.compile_timeout = config.timeout;
  options.priority = config.priority;
  options.max_reply_bytes = 2 * config.max_object_bytes + (1 << 20);
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

// The cache tiers `config` asks for: memory; disk, left out with a warning when its folder
// cannot be used (a cache is an optimization); Redis. A configuration error is logged.
absl::StatusOr<std::vector<std::unique_ptr<CacheTier>>> CacheTiersFor(
    const DaemonConfig::Cache& config, const std::string& cluster_key) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(config.memory_bytes));
  if (config.disk_bytes > 0) {
    const std::string& dir = config.dir;
    absl::StatusOr<std::vector<std::string>> secrets = DiskCacheSecrets(config, cluster_key);
    if (!secrets.ok() && !absl::IsFailedPrecondition(secrets.status())) {
      // A secret others can read, or one the folder's writers could replace, authenticates
      // nothing: the operator must fix it, as for the cluster key.
      Log(LogLevel::kError, "cannot use the disk cache secret",
          {{"error", secrets.status().ToString()}});
      return absl::InvalidArgumentError("bad cache configuration");
    }
    absl::StatusOr<std::unique_ptr<DiskTier>> disk =
        secrets.ok() ? DiskTier::Open(dir, config.disk_bytes, *secrets) : secrets.status();
    if (disk.ok()) {
      Log(LogLevel::kInfo, "disk cache", {{"dir", dir}});
      tiers.push_back(std::move(*disk));
    } else {
      // A cache is an optimization: serve from memory rather than not at all.
      Log(LogLevel::kWarning, "no disk cache: serving with the memory tier only",
          {{"dir", dir}, {"error", disk.status().ToString()}});
    }
  }
  if (const std::string& url = config.redis_url; !url.empty()) {
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
    if (const std::string& file = config.redis_password_file; !file.empty()) {
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
    redis.prefix = config.redis_prefix;
    redis.ttl = config.redis_ttl;
    redis.connect_timeout = config.redis_connect_timeout;
    redis.command_timeout = config.redis_command_timeout;
    redis.breaker_open = config.redis_retry_after;
    Log(LogLevel::kInfo, "redis cache tier",
        {{"host", redis.address.host},
         {"port", absl::StrCat(redis.address.port)},
         {"db", absl::StrCat(redis.address.db)},
         {"prefix", redis.prefix}});
    tiers.push_back(std::make_unique<RedisTier>(std::move(redis)));
  }
  return tiers;
}

// Quotas from the host's memory unless the configuration gives them: no set of clients can take all
// of it.
RegistryLimits RegistryLimitsFor(const DaemonConfig::Limits& config, int64_t host_memory) {
  RegistryLimits limits = RegistryLimits::ForHostMemory(host_memory);
  limits.idle_ttl = config.idle_ttl;
  if (config.max_buffer_bytes > 0) limits.max_buffer_bytes = config.max_buffer_bytes;
  if (config.max_client_bytes > 0) limits.max_identity_bytes = config.max_client_bytes;
  if (config.max_total_bytes > 0) limits.max_total_bytes = config.max_total_bytes;
  limits.max_identity_sessions = config.max_sessions_per_client;
  limits.max_sessions = config.max_sessions;
  return limits;
}

// Identities and anonymous rights. A configuration error is logged.
absl::StatusOr<std::unique_ptr<Authenticator>> AuthenticatorFor(
    const DaemonConfig::Security& config) {
  AuthConfig auth_config;
  auth_config.identities_file = config.identities_file;
  absl::StatusOr<uint32_t> rights = ParseRights(config.anonymous_rights);
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

// Builds and starts the gRPC server on `config.listen` with `services`; `port` gets the TCP port
// bound. A unix socket is created owner-only, with no moment where others could connect, then given
// `config.socket_mode`: the file's permissions are who may call. A failure is logged.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpcServer(
    const DaemonConfig::Network& config,
    const std::shared_ptr<grpc::ServerCredentials>& credentials,
    const std::vector<grpc::Service*>& services, int* port) {
  const std::string& listen = config.listen;
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
  thread_quota.SetMaxThreads(config.max_rpc_threads);
  builder.SetResourceQuota(thread_quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config.max_streams_per_connection);
  // A client whose machine vanished (no FIN, no RST) leaves a connection gRPC believes open,
  // and with it the client's sessions and their memory: ping such connections, and close those
  // that do not answer. Pings go out without data in between (a session sends nothing after
  // its first message), so neither the count nor the interval of those may stop them.
  if (const absl::Duration keepalive = config.keepalive; keepalive > absl::ZeroDuration()) {
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
  if (unix_socket && chmod(UnixSocketPath(listen).c_str(), config.socket_mode) != 0) {
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

// The local socket at `config.local_socket_path` (none when empty), serving `kernels`' hot calls. A
// failure is logged.
absl::StatusOr<std::unique_ptr<LocalSocket>> StartLocalSocket(const DaemonConfig::Network& config,
                                                              LocalTickets* tickets,
                                                              KernelServiceImpl& kernels) {
  const std::string& path = config.local_socket_path;
  if (path.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<LocalSocket>> started = LocalSocket::Start(
      LocalSocketOptions{
          .path = path,
          .mode = config.socket_mode,
          .idle_timeout = config.local_socket_idle_timeout,
          .spin = config.local_socket_spin,
          .max_spinning = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2))},
      tickets,
      [&kernels](const Identity& who, const std::string& frame, std::function<bool()> gone) {
        return kernels.ServeLocalFrame(who, frame, std::move(gone));
      });
  if (!started.ok()) {
    Log(LogLevel::kError, "cannot open the local socket",
        {{"error", std::string(started.status().message())}});
  }
  return started;
}

// Logs where the daemon serves (warning when anonymous callers beyond this machine have
// rights) and writes the port file: the gRPC address, then the metrics one.
void AnnounceServing(const DaemonConfig& config, const std::string& bound,
                     const std::string& metrics_bound, const Authenticator& auth) {
  const std::string& local_socket_path = config.network.local_socket_path;
  Log(LogLevel::kInfo, "serving",
      {{"grpc", bound},
       {"metrics", metrics_bound},
       {"local_socket", local_socket_path},
       {"tls", config.security.tls.cert.empty() ? "off" : "on"},
       {"identities", absl::StrCat(auth.identities())},
       {"anonymous_rights", RightsToString(auth.anonymous_rights())}});
  if (!IsLocalAddress(config.network.listen) && auth.anonymous_rights() != 0) {
    Log(LogLevel::kWarning,
        "listening beyond this machine with anonymous access: anyone who reaches this port may "
        "use the anonymous rights; give --identities (and TLS) or --anonymous_rights=none",
        {{"grpc", bound}, {"anonymous_rights", RightsToString(auth.anonymous_rights())}});
  }
  if (const std::string& file = config.network.port_file; !file.empty()) {
    // Written then renamed, so a reader never sees half of it.
    std::string temp = file + ".tmp";
    std::ofstream(temp) << bound << "\n" << metrics_bound << "\n";
    std::rename(temp.c_str(), file.c_str());
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

// The cluster key from its file; "" without one. A file that cannot be used is logged.
absl::StatusOr<std::string> ClusterKeyFor(const DaemonConfig::Cache& config) {
  if (config.cluster_key_file.empty()) return std::string();
  auto key = ReadClusterKey(config.cluster_key_file);
  if (!key.ok()) {
    Log(LogLevel::kError, "cannot use the cluster key", {{"error", key.status().ToString()}});
  }
  return key;
}

// The compilers a client may name for a target this machine has no device of (CUDA's, through
// NVRTC, which needs no GPU).
TargetCompilers TargetCompilersFor(const CompilerWrapper& wrap_compiler) {
  return [wrap_compiler](const std::string& base,
                         const std::string& target) -> absl::StatusOr<CompilerPair> {
#ifdef UOPD_WITH_CUDA
    if (base == "CUDA") return CreateCudaCompilerPair(target, wrap_compiler);
#endif
    return absl::FailedPreconditionError(
        absl::StrCat("this server cannot compile for ", base, " target ", target));
  };
}

// The metrics endpoint, or null when none is asked for. A failure is logged.
absl::StatusOr<std::unique_ptr<Metrics>> StartMetrics(const std::string& address,
                                                      const MetricsSources& sources) {
  if (address.empty()) return nullptr;
  auto started = Metrics::Start(address, sources);
  if (!started.ok()) {
    Log(LogLevel::kError, "cannot start the metrics endpoint",
        {{"error", started.status().ToString()}});
  }
  return started;
}

// Builds the daemon from `config`, serves until a signal has drained it, and returns the exit
// code: 1 when something could not start, 2 for a configuration that cannot be used.
int Run(const DaemonConfig& config) {
  google::protobuf::SetLogHandler(LogProtobufMessage);
  SetLogLevel(config.log_level);
  RaiseOpenFileLimit();

  // Signals go to one thread that starts the drain; every other thread has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Before any thread starts: kernels run on these threads' stacks, whatever `ulimit -s` says.
  EnsureThreadStacksOfAtLeast(kKernelThreadStackBytes);
  ThreadPool pool(config.threads - 1);

  // Compilers run in sandboxed worker processes: what a compile does to its process (crash,
  // exhaust memory, loop, read files it is told to) never reaches the daemon.
  SetCompileThreadPriority(config.compile.priority);
  SetTensorCoresEnabled(config.compile.tensor_cores);
  absl::StatusOr<std::unique_ptr<CompileWorkerPool>> started_workers =
      StartCompileWorkers(config.compile);
  if (!started_workers.ok()) return 1;
  std::unique_ptr<CompileWorkerPool> compile_workers = *std::move(started_workers);
  CompilerWrapper wrap_compiler;
  if (compile_workers != nullptr) wrap_compiler = SandboxIn(compile_workers.get());

  DeviceRegistry devices;
  if (!AddDevices(devices, &pool, wrap_compiler).ok()) return 1;

  absl::StatusOr<std::string> cluster_key = ClusterKeyFor(config.cache);
  if (!cluster_key.ok()) return 2;
  absl::StatusOr<std::vector<std::unique_ptr<CacheTier>>> tiers =
      CacheTiersFor(config.cache, *cluster_key);
  if (!tiers.ok()) return 2;
  KernelCache cache(*std::move(tiers));
  CachingProgramSource programs(cache, 4096, config.optimization, config.search);

  const RegistryLimits limits =
      RegistryLimitsFor(config.limits, devices.devices().front()->memory_bytes());
  ResourceRegistry resources(limits);

  absl::StatusOr<std::unique_ptr<Authenticator>> auth = AuthenticatorFor(config.security);
  if (!auth.ok()) return 2;
  auto credentials = ServerCredentialsFor(config.security.tls);
  if (!credentials.ok()) {
    Log(LogLevel::kError, "cannot set up TLS", {{"error", credentials.status().ToString()}});
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Metrics>> metrics = StartMetrics(
      config.network.metrics, MetricsSources{devices, cache, resources, compile_workers.get()});
  if (!metrics.ok()) return 1;

  RunWatchdog watchdog;
  ServerDrain drain;
  KernelAstMemo asts;
  LocalTickets local_tickets;
  CallLimiter calls(config.network.max_calls_per_client);
  FairShare large_kernels(config.compile.large_kernel_slots);
  const std::string& local_socket_path = config.network.local_socket_path;
  KernelServiceImpl kernel_service(
      ServiceContext{.devices = devices,
                     .programs = programs,
                     .resources = resources,
                     .pool = &pool,
                     .metrics = metrics->get(),
                     .limits = config.limits.ir,
                     .target_compilers = TargetCompilersFor(wrap_compiler),
                     .watchdog = &watchdog,
                     .drain = &drain,
                     .allow_client_source = config.compile.allow_client_source,
                     .auth = auth->get(),
                     .asts = &asts,
                     .local_tickets = local_socket_path.empty() ? nullptr : &local_tickets,
                     .local_socket_path = local_socket_path,
                     .calls = &calls,
                     .stream_idle_timeout = config.network.stream_idle_timeout,
                     .large_kernels = &large_kernels,
                     .large_kernel_nodes = config.compile.large_kernel_nodes});
  CacheServiceImpl cache_service(cache, RpcEnv{metrics->get(), &drain, auth->get(), &calls},
                                 *cluster_key);

  int port = 0;
  absl::StatusOr<std::unique_ptr<grpc::Server>> started_server =
      StartGrpcServer(config.network, *credentials, {&kernel_service, &cache_service}, &port);
  if (!started_server.ok()) return 1;
  std::unique_ptr<grpc::Server> server = *std::move(started_server);
  absl::StatusOr<std::unique_ptr<LocalSocket>> local_socket =
      StartLocalSocket(config.network, &local_tickets, kernel_service);
  if (!local_socket.ok()) return 1;
  AnnounceServing(config, WithPort(config.network.listen, port),
                  *metrics ? WithPort(config.network.metrics, (*metrics)->port()) : "", **auth);

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
  (void)metrics->release();
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
  absl::StatusOr<uopd::DaemonConfig> config = uopd::DaemonConfigFromFlags();
  if (!config.ok()) {
    std::fprintf(stderr, "uopd: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  // Debian builds abseil without NDEBUG, so every absl::Mutex acquisition would also update a
  // process-wide lock-order graph under one global lock: a point of contention for every thread
  // of a loaded daemon. Lock order is a property of the code, which the tests' daemons check.
  absl::SetMutexDeadlockDetectionMode(config->check_lock_order ? absl::OnDeadlockCycle::kAbort
                                                               : absl::OnDeadlockCycle::kIgnore);
  int rc = uopd::Run(*config);
  // Everything the daemon owns was shut down and freed in Run(). What is left are library
  // singletons whose exit-time teardown (gRPC's in particular) takes over a second and
  // serves no purpose in a process that is exiting: skip it.
  std::fflush(nullptr);
  std::_Exit(rc);
}
