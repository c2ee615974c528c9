// Load test: N concurrent clients (one connection each) against one daemon on loopback, mixing
// compiles (mostly cache hits, some new kernels), one-shot Executes, buffer traffic (create,
// write, read, free) and plans (prepare, run, release), bounded in time and in operations.
// Reports throughput, latency percentiles per operation, unexpected errors, and the resident
// memory of the daemon (and its compile workers) before and after; exits 1 on any unexpected
// error, so it doubles as a test.
//
//   load_test --daemon PATH [--clients 32] [--seconds 20] [--max_ops 1000000] [--label TEXT]
#include <dirent.h>
#include <sys/types.h>

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

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
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
void ClientLoop(const std::string& address, int id, std::chrono::steady_clock::time_point end,
                std::atomic<int64_t>& budget, Results& results) {
  uopd::Client client(address);
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
      const double factor = is_new ? 1000.0 + id * 100000.0 + (++fresh) : 1.0 + rng() % 16;
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

}  // namespace

int main(int argc, char** argv) {
  std::string daemon_path, label = "uopd";
  int clients = 32, seconds = 20;
  int64_t max_ops = 1'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--daemon")
      daemon_path = argv[i + 1];
    else if (arg == "--clients")
      clients = std::atoi(argv[i + 1]);
    else if (arg == "--seconds")
      seconds = std::atoi(argv[i + 1]);
    else if (arg == "--max_ops")
      max_ops = std::atoll(argv[i + 1]);
    else if (arg == "--label")
      label = argv[i + 1];
  }
  if (daemon_path.empty()) {
    std::fprintf(stderr,
                 "usage: load_test --daemon PATH [--clients N] [--seconds S] "
                 "[--max_ops N] [--label TEXT]\n");
    return 2;
  }
  uopd::testing::DaemonProcess daemon(daemon_path, uopd::testing::TempDir("load-test"));
  if (!daemon.running()) return 1;
  {
    uopd::Client warm(daemon.address());  // the shared kernels, compiled once
    for (int f = 1; f <= 16; ++f) {
      (void)warm.Compile(uopd::testing::CompileOf(uopd::testing::ScaleKernel(256, f)));
    }
    (void)warm.Execute(AddRequest(4096));
  }
  const double rss_before = ResidentMiB(daemon.pid());
  Results results;
  std::atomic<int64_t> budget{max_ops};
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  std::vector<std::thread> threads;
  for (int id = 0; id < clients; ++id) {
    threads.emplace_back(ClientLoop, daemon.address(), id, end, std::ref(budget),
                         std::ref(results));
  }
  double rss_peak = 0;
  while (std::chrono::steady_clock::now() < end && budget.load() > 0) {
    rss_peak = std::max(rss_peak, ResidentMiB(daemon.pid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // calls done; what stays resident
  const double rss_after = ResidentMiB(daemon.pid());

  int64_t total = 0, errors = 0;
  for (const auto& [op, samples] : results.latency) total += static_cast<int64_t>(samples.size());
  for (const auto& [what, count] : results.errors) errors += count;
  std::printf("%s: %d clients, %.1f s, %lld operations, %.0f ops/s, %lld unexpected errors\n",
              label.c_str(), clients, elapsed, static_cast<long long>(total), total / elapsed,
              static_cast<long long>(errors));
  std::printf("%-30s %8s %10s %10s %10s\n", "operation", "count", "p50 ms", "p99 ms", "max ms");
  for (const auto& [op, samples] : results.latency) {
    using uopd::bench::Percentile;
    std::printf("%-30s %8zu %10.2f %10.2f %10.2f\n", op.c_str(), samples.size(),
                1e3 * Percentile(samples, 0.5), 1e3 * Percentile(samples, 0.99),
                1e3 * Percentile(samples, 1.0));
  }
  std::printf("resident MiB (daemon + compile workers): before %.0f, peak %.0f, after %.0f\n",
              rss_before, rss_peak, rss_after);
  for (const auto& [what, count] : results.errors) {
    std::printf("ERROR x%lld %s\n", static_cast<long long>(count), what.c_str());
  }
  return errors == 0 ? 0 : 1;
}
