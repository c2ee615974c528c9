// How good the cost model's choice is (core/opt/cost_model.h): for each kernel, the heuristics'
// candidates (core/opt/heuristic.h RankCpuCandidates) are all compiled and timed on the same
// buffers, interleaved, and the one the model ranks first is compared with the fastest measured.
// `regret` = time of the model's choice / time of the fastest candidate (1.00: the model chose
// the best there was). Prints each kernel's line (--verbose: every candidate, model and time),
// then the geometric mean and the worst regret.
//
//   cost_model_bench [--top N] [--rounds 3] [--min_ms 2] [--verbose] PATH...   (cases or folders)
//
// --top times only the N candidates the model likes best (plus tinygrad's and the first
// heuristic's when they are further down): a regret then says how much better a candidate among
// those would have been.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "absl/strings/match.h"
#include "backends/cpu/cpu_device.h"
#include "bench/bench_util.h"
#include "bench/corpus_binding.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/heuristic.h"
#include "core/opt/preopt.h"
#include "core/wire/decode.h"

namespace {

struct Timed {
  uopd::RankedCandidate candidate;
  std::unique_ptr<uopd::CachingProgramSource> inner;
  std::unique_ptr<uopd::bench::OptimizingSource> source;
  std::unique_ptr<uopd::bench::Built> built;
  int reps = 1;
  double best = std::numeric_limits<double>::infinity();  // seconds per call
};

}  // namespace

int main(int argc, char** argv) {
  int top = 1000, rounds = 3;
  double min_ms = 2;
  bool verbose = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--top" && i + 1 < argc) {
      top = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--min_ms" && i + 1 < argc) {
      min_ms = std::atof(argv[++i]);
    } else if (arg == "--verbose") {
      verbose = true;
    } else if (absl::StartsWith(arg, "--")) {
      std::fprintf(stderr,
                   "usage: cost_model_bench [--top N] [--rounds N] [--min_ms MS] "
                   "[--verbose] PATH...\n");
      return 2;
    } else {
      paths.push_back(arg);
    }
  }
  auto files = uopd::ListCorpusFiles(paths);
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", files.status().ToString().c_str());
    return 2;
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  uopd::ThreadPool pool(cores - 1);
  auto device = uopd::CreateCpuDevice(&pool);
  if (!device.ok()) return 1;
  uopd::Device& cpu = **device;
  const uopd::OptTarget target = uopd::OptTargetFor(
      cpu.spec().base_device_key(), cpu.compilers().front().compiler->Target(), cpu.threads());
  uopd::KernelCache cache;
  double log_regret = 0;
  int kernels = 0, over = 0;
  double worst = 1;
  std::printf("%-28s %5s %7s %9s %9s  %s\n", "kernel", "cands", "regret", "chosen us", "best us",
              "chosen | best");
  for (const std::string& path : *files) {
    auto entry = uopd::LoadCorpusFile(path);
    if (!entry.ok() || entry->is_plan) continue;  // cases only: one kernel each
    auto bound = uopd::bench::Bind(cpu, *entry);
    auto ast = uopd::DecodeKernelAst(entry->kase.ast());
    if (!bound.ok() || !ast.ok()) continue;
    uopd::Scheduler base(*uopd::RunPreOptPasses(*ast, target), target);
    std::vector<uopd::RankedCandidate> ranked = uopd::RankCpuCandidates(base, *ast);
    std::vector<Timed> timed;
    for (size_t i = 0; i < ranked.size(); ++i) {
      if (static_cast<int>(i) >= top && ranked[i].origin != "tinygrad" &&
          ranked[i].origin != "first heuristic") {
        continue;
      }
      Timed t;
      t.candidate = ranked[i];
      t.inner = std::make_unique<uopd::CachingProgramSource>(cache);
      t.source = std::make_unique<uopd::bench::OptimizingSource>(*t.inner, ranked[i].opts, target);
      auto built = uopd::bench::Build(cpu, *t.source, &pool, *bound, uopd::OptMode::kNone);
      if (!built.ok()) continue;
      t.built = std::make_unique<uopd::bench::Built>(std::move(*built));
      // Calls per sample: enough for min_ms.
      const double once = uopd::bench::SecondsOf([&] { t.built->Call(0); });
      t.reps = std::max(1, static_cast<int>(min_ms * 1e-3 / std::max(once, 1e-9)));
      timed.push_back(std::move(t));
    }
    if (timed.empty()) continue;
    for (int r = 0; r < rounds; ++r) {
      for (Timed& t : timed) {
        const double s = uopd::bench::SecondsOf([&] {
          for (int k = 0; k < t.reps; ++k) t.built->Call(0);
        });
        t.best = std::min(t.best, s / t.reps);
      }
    }
    const Timed* fastest = &timed[0];
    for (const Timed& t : timed) {
      if (t.best < fastest->best) fastest = &t;
    }
    const double regret = timed[0].best / fastest->best;
    log_regret += std::log(regret);
    worst = std::max(worst, regret);
    ++kernels;
    if (regret > 1.10) ++over;
    std::printf("%-28s %5zu %7.2f %9.1f %9.1f  %s | %s\n", entry->kase.name().substr(0, 28).c_str(),
                timed.size(), regret, timed[0].best * 1e6, fastest->best * 1e6,
                uopd::OptsToString(timed[0].candidate.opts).c_str(),
                uopd::OptsToString(fastest->candidate.opts).c_str());
    if (verbose) {
      for (const Timed& t : timed) {
        std::printf("    model %9.3g  time %9.1f us  x%5.2f  %-15s %s\n", t.candidate.cycles,
                    t.best * 1e6, t.best / fastest->best, t.candidate.origin.c_str(),
                    uopd::OptsToString(t.candidate.opts).c_str());
      }
    }
    std::fflush(stdout);
  }
  if (kernels > 0) {
    std::printf("%d kernels: regret geomean %.3f, worst %.2f, %d above 1.10\n", kernels,
                std::exp(log_regret / kernels), worst, over);
  }
  return 0;
}
