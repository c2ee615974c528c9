// The optimizer's benchmark (issue 12): the workloads tinygrad 0.12.0 schedules (bench/tinygrad:
// matmul 1024^3, conv2d 1x32x64x64 with 32 3x3 filters, column and row sums of 4096^2, softmax
// 2048^2), run on uopd's CPU as written and with the heuristics, side by side in one run with
// tinygrad's own CPU device (its default heuristics) on the same kernels, numpy's matmul and
// memcpy. Kernel time only (uopd: the kernels' own start-to-end times; tinygrad: its device
// time), median of the runs.
//
//   optimizer_bench --workloads build/workloads/full --python build/tinygrad-venv/bin/python
//                   [--runs 10] [--only matmul,rowsum]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_device.h"
#include "bench/bench_util.h"
#include "core/corpus/corpus_file.h"
#include "core/corpus/corpus_runner.h"
#include "core/program/caching_program_source.h"
#include "core/util/log.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace {

struct Workload {
  const char* name;
  double work;  // flops (matmul, conv2d) or bytes read and written (the others)
  bool flops;
};

// Useful work of each workload at the full size.
const Workload kWorkloads[] = {
    {"matmul", 2.0 * 1024 * 1024 * 1024, true},
    {"conv2d", 2.0 * 32 * 62 * 62 * 32 * 3 * 3, true},
    {"colsum", 4096.0 * 4096 * 4 + 4096 * 4, false},
    {"rowsum", 4096.0 * 4096 * 4 + 4096 * 4, false},
    {"softmax", 4.0 * 2048 * 2048 * 4, false},  // read x three times, write once
};

std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  pclose(pipe);
  return out;
}

// tinygrad's kernel time (and numpy's, for matmul) from bench/tinygrad/time_tinygrad.py.
struct Baseline {
  double tinygrad_s = 0;
  double numpy_s = 0;
};

std::map<std::string, Baseline> TimeTinygrad(const std::string& python, const std::string& only) {
  std::map<std::string, Baseline> out;
  if (python.empty()) return out;
  std::string json = RunCommand(
      absl::StrCat(python, " ", UOPD_SOURCE_DIR, "/bench/tinygrad/time_tinygrad.py --size full",
                   only.empty() ? "" : " --workloads " + only, " 2>/dev/null"));
  google::protobuf::Struct parsed;
  if (!google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) {
    std::fprintf(stderr, "tinygrad timing failed: %s\n", json.c_str());
    return out;
  }
  for (const auto& [name, value] : parsed.fields()) {
    Baseline b;
    const auto& fields = value.struct_value().fields();
    if (auto it = fields.find("tinygrad_s"); it != fields.end())
      b.tinygrad_s = it->second.number_value();
    if (auto it = fields.find("numpy_s"); it != fields.end()) b.numpy_s = it->second.number_value();
    out[name] = b;
  }
  return out;
}

// memcpy's rate over `bytes` (counting bytes read and written), median of runs.
double MemcpyRate(size_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::vector<double> t =
      uopd::bench::Sample(2, 9, [&] { std::memcpy(dst.data(), src.data(), bytes); });
  return 2.0 * bytes / uopd::bench::Percentile(t, 0.5);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, python, only, opts_text;
  int runs = 10;
  double search_budget = 20;  // seconds per kernel; 0: no search column
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--workloads")
      dir = argv[i + 1];
    else if (arg == "--python")
      python = argv[i + 1];
    else if (arg == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (arg == "--only")
      only = argv[i + 1];
    else if (arg == "--opts")
      opts_text = argv[i + 1];
    else if (arg == "--search_budget")
      search_budget = std::atof(argv[i + 1]);
    else if (arg == "--log_level" && std::string(argv[i + 1]) == "debug")
      uopd::SetLogLevel(uopd::LogLevel::kDebug);
  }
  if (dir.empty()) {
    std::fprintf(stderr,
                 "usage: optimizer_bench --workloads DIR [--python PATH] [--runs N] "
                 "[--only a,b] [--search_budget SECONDS]\n");
    return 2;
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  uopd::ThreadPool pool(cores - 1);
  auto device = uopd::CreateCpuDevice(&pool);
  if (!device.ok()) return 1;
  std::map<std::string, Baseline> baselines = TimeTinygrad(python, only);
  const double memcpy_rate = MemcpyRate(size_t{64} << 20);

  std::printf("%d cores; memcpy %.1f GB/s (read + written); search budget %.0f s per kernel\n",
              cores, memcpy_rate / 1e9, search_budget);
  std::printf("%-8s %11s %11s %11s %11s %8s %8s %8s  %s\n", "workload", "tinygrad ms", "uopd none",
              "uopd heur.", "uopd search", "heur/tg", "srch/tg", "vs none",
              "rate (heuristics; search)");
  const int modes = search_budget > 0 ? 3 : 2;
  for (const Workload& w : kWorkloads) {
    if (!only.empty() && !absl::StrContains(only, w.name)) continue;
    auto entry = uopd::LoadCorpusFile(absl::StrCat(dir, "/", w.name, ".json"));
    if (!entry.ok() || !entry->is_plan) {
      std::fprintf(stderr, "%s: %s\n", w.name, entry.status().ToString().c_str());
      continue;
    }
    double median[3] = {0, 0, 0};
    double search_seconds = 0;
    std::string verdict;
    for (int m = 0; m < modes; ++m) {
      uopd::KernelCache cache;
      uopd::SearchOptions search;
      search.budget = absl::Seconds(search_budget);
      uopd::CachingProgramSource source(cache, 4096, uopd::OptMode::kHeuristic, search);
      uopd::CorpusRunOptions options;
      options.source = &source;
      options.pool = &pool;
      const uopd::OptMode kModes[] = {uopd::OptMode::kNone, uopd::OptMode::kHeuristic,
                                      uopd::OptMode::kSearch};
      options.optimization.mode = kModes[m];
      if (m == 1 && !opts_text.empty()) {
        // Trying an opt list by hand: "UPCAST(0,16) UNROLL(0,4)" in place of the heuristics.
        options.optimization.mode = uopd::OptMode::kOpts;
        auto opts = uopd::ParseOptList(opts_text);
        if (!opts.ok()) {
          std::fprintf(stderr, "%s\n", opts.status().ToString().c_str());
          return 2;
        }
        options.optimization.opts = *opts;
      }
      // Reductions of thousands of terms in another order than tinygrad's: 1e-3 relative.
      const auto start = std::chrono::steady_clock::now();
      auto times = uopd::TimeCorpusPlan(**device, entry->plan, options,
                                        m == 0 ? std::max(1, runs / 5) : runs, 1e-3, 1e-3);
      if (m == 2) {
        search_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      if (!times.ok()) {
        verdict = times.status().ToString().substr(0, 120);
        continue;
      }
      median[m] = uopd::bench::Percentile(*times, 0.5);
    }
    const Baseline b = baselines[w.name];
    auto rate_text = [&](double seconds) -> std::string {
      if (seconds <= 0) return "-";
      const double rate = w.work / seconds;
      std::string text =
          w.flops ? absl::StrFormat("%.1f GFLOP/s", rate / 1e9)
                  : absl::StrFormat("%.1f GB/s = %.2fx memcpy", rate / 1e9, rate / memcpy_rate);
      if (b.numpy_s > 0)
        absl::StrAppend(&text, absl::StrFormat(" = %.2fx numpy", b.numpy_s / seconds));
      return text;
    };
    auto ratio = [](double a, double b) { return a > 0 && b > 0 ? a / b : 0.0; };
    std::printf("%-8s %11.2f %11.2f %11.2f %11.2f %7.2fx %7.2fx %7.1fx  %s; %s%s %s\n", w.name,
                b.tinygrad_s * 1e3, median[0] * 1e3, median[1] * 1e3, median[2] * 1e3,
                ratio(b.tinygrad_s, median[1]), ratio(b.tinygrad_s, median[2]),
                ratio(median[0], median[1]), rate_text(median[1]).c_str(),
                rate_text(median[2]).c_str(),
                modes == 3 ? absl::StrFormat(" (searched in %.0f s)", search_seconds).c_str() : "",
                verdict.c_str());
    if (b.numpy_s > 0) {
      std::printf("%-8s numpy %.1f GFLOP/s\n", "", w.work / b.numpy_s / 1e9);
    }
  }
  return 0;
}
