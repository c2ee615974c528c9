// Load test: N concurrent clients (one connection each) against one daemon on loopback, mixing
// compiles (mostly cache hits, some new kernels), one-shot Executes, buffer traffic (create,
// write, read, free) and plans (prepare, run, release), bounded in time and in operations.
// Reports throughput, latency percentiles per operation, unexpected errors, and the resident
// memory of the daemon (and its compile workers) before and after; exits 1 on any unexpected
// error, so it doubles as a test.
//
// With --attacker the honest clients act as one identity and run twice on one daemon: alone,
// then beside every attack of the security review at once (bench/load_attacker.h), run from a
// process of its own at idle priority (bench/attacker_process.h); the report puts their latencies
// side by side and counts what the daemon answered each attack.
//
//   load_test --daemon PATH [--clients 32] [--seconds 20] [--max_ops 1000000] [--label TEXT]
//             [--daemon_flag --flag=value]... [--attacker [--attacks slow_compiles,...]
//             [--attacker_nice 20 (the idle class; 0-19: a nice value)]]
#include <dirent.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "bench/attacker_process.h"
#include "bench/bench_util.h"
#include "bench/load_attacker.h"
#include "client/uopd_client.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/daemon_requests.h"
#include "tests/testing/sample_kernels.h"

namespace {

using uopd::v1::DType;

// Resident memory of `pid` and of its children (the compile workers), in MiB.
double ResidentMiB(pid_t pid) {
  auto rss_kib = [](const std::string& status_path) -> int64_t {
    std::ifstream in(status_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) {
        int64_t kib = 0;
        std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
        if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) return kib;
      }
    }
    return 0;
  };
  int64_t total = rss_kib("/proc/" + std::to_string(pid) + "/status");
  if (DIR* proc = opendir("/proc")) {
    while (dirent* entry = readdir(proc)) {
      int child = 0;
      if (!absl::SimpleAtoi(entry->d_name, &child)) continue;
      std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      size_t close = text.rfind(')');
      if (close == std::string::npos) continue;
      std::vector<std::string> fields = absl::StrSplit(text.substr(close + 2), ' ');
      int parent = 0;
      if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &parent) && parent == pid) {
        total += rss_kib("/proc/" + std::to_string(child) + "/status");
      }
    }
    closedir(proc);
  }
  return total / 1024.0;
}

struct Results {
  std::mutex mu;
  std::map<std::string, std::vector<double>> latency;  // by operation, seconds
  std::map<std::string, int64_t> errors;               // "op: status" -> count
  void Record(const std::string& op, double seconds) {
    std::lock_guard<std::mutex> lock(mu);
    latency[op].push_back(seconds);
  }
  void Error(const std::string& op, const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu);
    ++errors[op + ": " + status.ToString().substr(0, 160)];
  }
};

uopd::v1::ExecuteRequest AddRequest(int64_t n) {
  uopd::v1::ExecuteRequest request;
  for (int i = 0; i < 3; ++i) {
    auto* buffer = request.add_buffers()->mutable_inline_();
    buffer->set_dtype(DType::FLOAT32);
    buffer->set_size(n);
    if (i > 0) buffer->set_data(std::string(n * 4, static_cast<char>(i)));
  }
  *request.add_kernels()->mutable_ast() = uopd::testing::AddKernel(n);
  for (int i = 0; i < 3; ++i) request.mutable_kernels(0)->add_buffers(i);
  request.add_return_buffers(0);
  return request;
}

// One client's loop: a fixed mix of operations until the time or the operation budget ends.
// `salt` keeps each run's new kernels new.
void ClientLoop(const std::string& address, const uopd::ClientOptions& options, int id, double salt,
                std::chrono::steady_clock::time_point end, std::atomic<int64_t>& budget,
                Results& results) {
  uopd::Client client(address, options);
  std::mt19937 rng(id);
  const uopd::v1::ExecuteRequest add = AddRequest(4096);
  const std::string payload(64 << 10, static_cast<char>(id));
  int fresh = 0;
  auto timed = [&](const std::string& op, auto&& call) {
    auto start = std::chrono::steady_clock::now();
    absl::Status status = call();
    results.Record(op,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!status.ok()) results.Error(op, status);
  };
  while (std::chrono::steady_clock::now() < end && budget.fetch_sub(1) > 0) {
    const int dice = static_cast<int>(rng() % 100);
    if (dice < 25) {
      // Mostly kernels every client shares (cache hits); one in ten is new (a real compile).
      const bool is_new = rng() % 10 == 0;
      const double factor = is_new ? 1000.0 + salt + id * 100000.0 + (++fresh) : 1.0 + rng() % 16;
      timed(is_new ? "compile (new)" : "compile (hit)", [&] {
        return client.Compile(uopd::testing::CompileOf(uopd::testing::ScaleKernel(256, factor)))
            .status();
      });
    } else if (dice < 50) {
      timed("execute", [&] { return client.Execute(add).status(); });
    } else if (dice < 80) {
      timed("buffer create/write/read/free", [&]() -> absl::Status {
        auto handle =
            client.CreateBuffer("CPU", DType::UINT8, static_cast<int64_t>(payload.size()));
        if (!handle.ok()) return handle.status();
        if (absl::Status s = client.WriteBuffer(*handle, payload); !s.ok()) return s;
        auto back = client.ReadBuffer(*handle);
        if (!back.ok()) return back.status();
        if (*back != payload) return absl::DataLossError("read back other bytes");
        return client.FreeBuffer(*handle);
      });
    } else {
      timed("plan prepare/run x3/release", [&]() -> absl::Status {
        uopd::v1::PrepareRequest prepare;
        *prepare.mutable_buffers() = add.buffers();
        *prepare.mutable_kernels() = add.kernels();
        auto plan = client.Prepare(prepare);
        if (!plan.ok()) return plan.status();
        uopd::v1::RunPlanRequest run;
        run.set_plan_id(plan->plan_id());
        for (int i = 0; i < 3; ++i) {
          if (auto ran = client.RunPlan(run); !ran.ok()) return ran.status();
        }
        return client.ReleasePlan(plan->plan_id());
      });
    }
  }
}

struct RunResult {
  Results results;
  double elapsed = 0;
  double rss_peak = 0;
  int64_t operations() const {
    int64_t total = 0;
    for (const auto& [op, samples] : results.latency) total += static_cast<int64_t>(samples.size());
    return total;
  }
  int64_t errors() const {
    int64_t total = 0;
    for (const auto& [what, count] : results.errors) total += count;
    return total;
  }
};

// `clients` honest clients for `seconds` (or until `max_ops` operations), sampling the daemon's
// resident memory meanwhile.
void RunClients(const uopd::testing::DaemonProcess& daemon, const uopd::ClientOptions& options,
                int clients, int seconds, int64_t max_ops, double salt, RunResult& run) {
  std::atomic<int64_t> budget{max_ops};
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  std::vector<std::thread> threads;
  for (int id = 0; id < clients; ++id) {
    threads.emplace_back(ClientLoop, daemon.address(), std::cref(options), id, salt, end,
                         std::ref(budget), std::ref(run.results));
  }
  while (std::chrono::steady_clock::now() < end && budget.load() > 0) {
    run.rss_peak = std::max(run.rss_peak, ResidentMiB(daemon.pid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : threads) t.join();
  run.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void PrintErrors(const RunResult& run) {
  for (const auto& [what, count] : run.results.errors) {
    std::printf("ERROR x%lld %s\n", static_cast<long long>(count), what.c_str());
  }
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct Options {
  std::string daemon_path, label = "uopd";
  int clients = 32, seconds = 20;
  int64_t max_ops = 1'000'000;
  bool attacker = false;
  std::vector<std::string> attacks, daemon_flags;
  int attacker_nice = uopd::bench::AttackTargets::kIdleClass;  // the attacker's client as if on its
                                                               // own host (load_attacker.h)
};

// The command line; false after saying what is wrong with it.
bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--attacker") {
      o->attacker = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (arg == "--daemon")
      o->daemon_path = argv[++i];
    else if (arg == "--clients")
      o->clients = std::atoi(argv[++i]);
    else if (arg == "--seconds")
      o->seconds = std::atoi(argv[++i]);
    else if (arg == "--max_ops")
      o->max_ops = std::atoll(argv[++i]);
    else if (arg == "--label")
      o->label = argv[++i];
    else if (arg == "--daemon_flag")
      o->daemon_flags.push_back(argv[++i]);
    else if (arg == "--attacks")
      o->attacks = absl::StrSplit(argv[++i], ',');
    else if (arg == "--attacker_nice")
      o->attacker_nice = std::atoi(argv[++i]);
  }
  if (o->daemon_path.empty()) {
    std::fprintf(stderr,
                 "usage: load_test --daemon PATH [--clients N] [--seconds S] "
                 "[--max_ops N] [--label TEXT] [--daemon_flag --flag=value]... "
                 "[--attacker [--attacks a,b,...] [--attacker_nice N (20: idle class)]]\n");
    return false;
  }
  for (const std::string& name : o->attacks) {
    if (std::find(std::begin(uopd::bench::kAttacks), std::end(uopd::bench::kAttacks), name) ==
        std::end(uopd::bench::kAttacks)) {
      std::fprintf(stderr, "unknown attack '%s'; bench/load_attacker.h names them\n", name.c_str());
      return false;
    }
  }
  return true;
}

// The honest clients' latencies alone and beside the attacker, what the attacker was answered,
// and whether the daemon still serves.
void PrintAttacked(const std::string& label, const RunResult& alone, RunResult& attacked,
                   const std::map<std::string, int64_t>& outcomes, double rss_before,
                   const absl::Status& alive, const std::string& scrape) {
  using uopd::bench::Percentile;
  std::printf("%s with the attacker: %.1f s, %lld operations, %.0f ops/s, %lld unexpected errors\n",
              label.c_str(), attacked.elapsed, static_cast<long long>(attacked.operations()),
              attacked.operations() / attacked.elapsed, static_cast<long long>(attacked.errors()));
  std::printf("%-30s %17s %17s %17s %8s\n", "honest operation", "count alone/with",
              "p50 ms alone/with", "p99 ms alone/with", "p99 x");
  for (const auto& [op, samples] : alone.results.latency) {
    const std::vector<double>& with = attacked.results.latency[op];
    const double p99 = Percentile(samples, 0.99), p99_with = Percentile(with, 0.99);
    std::printf("%-30s %8zu/%-8zu %8.2f/%-8.2f %8.2f/%-8.2f %8.2f\n", op.c_str(), samples.size(),
                with.size(), 1e3 * Percentile(samples, 0.5), 1e3 * Percentile(with, 0.5), 1e3 * p99,
                1e3 * p99_with, p99 > 0 ? p99_with / p99 : 0.0);
  }
  std::printf("attack: what the daemon answered\n");
  for (const auto& [what, count] : outcomes) {
    std::printf("  %-62s x%lld\n", what.c_str(), static_cast<long long>(count));
  }
  std::printf(
      "resident MiB (daemon + compile workers): before %.0f, peak alone %.0f, with the "
      "attacker %.0f\n",
      rss_before, alone.rss_peak, attacked.rss_peak);
  std::printf("after the attack: an honest Execute %s, /metrics %s\n",
              alive.ok() ? "succeeds" : alive.ToString().c_str(),
              scrape.find("uopd_") != std::string::npos ? "answers" : "does not answer");
  for (absl::string_view line : absl::StrSplit(scrape, '\n')) {
    if (absl::StartsWith(line, "uopd_compile_worker_events_total")) {
      std::printf("  %s\n", std::string(line).c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // As the daemon does (server/main.cc): Debian's abseil would otherwise keep a global lock-order
  // graph on every absl::Mutex acquisition of the clients, the attacker's included.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (argc > 1 && std::strcmp(argv[1], uopd::bench::kAttackerProcessFlag) == 0) {
    return uopd::bench::RunAttackerProcess(argc, argv);
  }
  Options o;
  if (!ParseOptions(argc, argv, &o)) return 2;
  const std::string &daemon_path = o.daemon_path, &label = o.label;
  const int clients = o.clients, seconds = o.seconds, attacker_nice = o.attacker_nice;
  const int64_t max_ops = o.max_ops;
  const bool attacker = o.attacker;
  const std::vector<std::string>&attacks = o.attacks, &daemon_flags = o.daemon_flags;
  const std::string dir = uopd::testing::TempDir("load-test");
  std::vector<std::string> flags;
  uopd::ClientOptions honest;
  std::string attacker_token;
  if (attacker) {
    // Two identities and anonymous callers that may compile and run, as on a shared server;
    // a 256 MiB quota each, so the memory attacks reach it within the run.
    honest.token = "honest-token-2f7c1d9a";
    attacker_token = "attacker-token-9e4b0a3c";
    WriteFile(dir + ".identities", "honest compile,run token:" + honest.token +
                                       "\nattacker compile,run token:" + attacker_token + "\n");
    flags = {"--identities=" + dir + ".identities", "--anonymous_rights=compile,run",
             "--max_client_bytes=268435456"};
  }
  // Timed as in production: without the lock-order checks DaemonProcess asks for in tests.
  flags.push_back("--check_lock_order=false");
  flags.insert(flags.end(), daemon_flags.begin(), daemon_flags.end());
  uopd::testing::DaemonProcess daemon(daemon_path, dir, flags);
  if (!daemon.running()) return 1;
  {
    uopd::Client warm(daemon.address(), honest);  // the shared kernels, compiled once
    for (int f = 1; f <= 16; ++f) {
      (void)warm.Compile(uopd::testing::CompileOf(uopd::testing::ScaleKernel(256, f)));
    }
    (void)warm.Execute(AddRequest(4096));
  }
  const double rss_before = ResidentMiB(daemon.pid());
  RunResult alone;
  RunClients(daemon, honest, clients, seconds, max_ops, 0, alone);
  std::printf("%s: %d clients, %.1f s, %lld operations, %.0f ops/s, %lld unexpected errors\n",
              label.c_str(), clients, alone.elapsed, static_cast<long long>(alone.operations()),
              alone.operations() / alone.elapsed, static_cast<long long>(alone.errors()));
  using uopd::bench::Percentile;
  if (!attacker) {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // calls done; what stays resident
    const double rss_after = ResidentMiB(daemon.pid());
    std::printf("%-30s %8s %10s %10s %10s\n", "operation", "count", "p50 ms", "p99 ms", "max ms");
    for (const auto& [op, samples] : alone.results.latency) {
      std::printf("%-30s %8zu %10.2f %10.2f %10.2f\n", op.c_str(), samples.size(),
                  1e3 * Percentile(samples, 0.5), 1e3 * Percentile(samples, 0.99),
                  1e3 * Percentile(samples, 1.0));
    }
    std::printf("resident MiB (daemon + compile workers): before %.0f, peak %.0f, after %.0f\n",
                rss_before, alone.rss_peak, rss_after);
    PrintErrors(alone);
    return alone.errors() == 0 ? 0 : 1;
  }

  auto attack = uopd::bench::AttackerProcess::Start(
      "/proc/self/exe", {daemon.address(), daemon.metrics_address(), attacker_token,
                         /*idle_connections=*/500, attacks, attacker_nice});
  if (!attack.ok()) {
    std::fprintf(stderr, "%s\n", attack.status().ToString().c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // every attack under way
  RunResult attacked;
  RunClients(daemon, honest, clients, seconds, max_ops, 1e7, attacked);
  auto outcomes = attack->Stop();
  if (!outcomes.ok()) {
    std::fprintf(stderr, "%s\n", outcomes.status().ToString().c_str());
    return 1;
  }
  // The daemon still serves after the attacker has gone.
  uopd::Client after(daemon.address(), honest);
  const absl::Status alive = after.Execute(AddRequest(4096)).status();
  const std::string scrape = daemon.ScrapeMetrics();

  PrintAttacked(label, alone, attacked, *outcomes, rss_before, alive, scrape);
  PrintErrors(alone);
  PrintErrors(attacked);
  return alone.errors() == 0 && attacked.errors() == 0 && alive.ok() ? 0 : 1;
}
