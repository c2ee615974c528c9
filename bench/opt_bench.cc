// Kernel time of a plan file (bench/tinygrad exports) on the CPU with a given opt list applied to
// each of its kernels: for trying optimizations by hand.
//
//   opt_bench PLAN_OR_CASE.json [--opts "UPCAST(1,16) UPCAST(0,8)" | --heuristic] [--kernel N]
//   [--emit] [--fma] [--reps N] [--threads N] [--trace_cost] [--search SECONDS]
// prints each kernel's opts and the plan's kernel time (with --kernel, that kernel's alone);
// --emit prints the rendered source instead of timing; --trace_cost the cost model's view;
// --fma renders with fused multiply-adds allowed (Optimization.allow_fma); --search runs the
// daemon's opt search on each kernel for that long and prints what it found, against the
// heuristics' time on the same inputs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/cpu/cpu_device.h"
#include "bench/bench_util.h"
#include "bench/corpus_binding.h"
#include "core/codegen/pipeline.h"
#include "core/corpus/corpus_file.h"
#include "core/corpus/corpus_runner.h"
#include "core/ir/printer.h"
#include "core/opt/cost_model.h"
#include "core/opt/optimize.h"
#include "core/opt/scheduler.h"
#include "core/program/caching_program_source.h"
#include "core/search/kernel_search.h"
#include "core/wire/decode.h"

namespace {

// The opts of --opts; exits on a malformed list.
std::vector<uopd::Opt> Opts(const std::string& text) {
  auto opts = uopd::ParseOptList(text);
  if (!opts.ok()) {
    std::fprintf(stderr, "opt_bench: %s\n", opts.status().ToString().c_str());
    std::exit(2);
  }
  return *opts;
}

// The command line.
struct Options {
  std::string path, opts_text;
  int reps = 5, kernel = -1, threads = 0;
  bool emit = false, heuristic = false, trace_cost = false, dump = false;
  double search_seconds = 0;
  uopd::RenderOptions render;
};

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--opts" && i + 1 < argc) {
      o.opts_text = argv[++i];
    } else if (arg == "--trace_cost") {
      o.trace_cost = true;
    } else if (arg == "--fma") {
      o.render.allow_fma = true;
    } else if (arg == "--search" && i + 1 < argc) {
      o.search_seconds = std::atof(argv[++i]);
    } else if (arg == "--emit") {
      o.emit = true;
    } else if (arg == "--dump") {
      o.dump = true;
    } else if (arg == "--heuristic") {
      o.heuristic = true;
    } else if (arg == "--kernel" && i + 1 < argc) {
      o.kernel = std::atoi(argv[++i]);
    } else if (arg == "--reps" && i + 1 < argc) {
      o.reps = std::atoi(argv[++i]);
    } else if (arg == "--threads" && i + 1 < argc) {
      o.threads = std::atoi(argv[++i]);
    } else {
      o.path = arg;
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseOptions(argc, argv);
  const std::string& path = o.path;
  const std::string& opts_text = o.opts_text;
  const int reps = o.reps, kernel = o.kernel;
  int& threads = o.threads;
  const bool emit = o.emit, heuristic = o.heuristic, trace_cost = o.trace_cost, dump = o.dump;
  const double search_seconds = o.search_seconds;
  const uopd::RenderOptions& render = o.render;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  uopd::ThreadPool pool(threads - 1);
  auto device = uopd::CreateCpuDevice(&pool);
  auto entry = uopd::LoadCorpusFile(path);
  if (!device.ok() || !entry.ok()) {
    std::fprintf(stderr,
                 "usage: opt_bench PLAN_OR_CASE.json [--opts ...|--heuristic] [--kernel N] "
                 "[--emit] [--dump]\n");
    return 2;
  }
  if (!entry->is_plan) {
    entry->plan = uopd::CaseAsPlan(entry->kase);
    entry->is_plan = true;
  }
  uopd::Device& cpu = **device;
  const uopd::OptTarget target = uopd::OptTargetFor(
      cpu.spec().base_device_key(), cpu.compilers().front().compiler->Target(), cpu.threads());
  // The kernels' ASTs with the opts (or the heuristics) applied, as they will run.
  auto optimize =
      [&](std::shared_ptr<const uopd::KernelAst> ast) -> absl::StatusOr<uopd::OptimizedKernel> {
    uopd::OptimizeRequest request;
    request.mode = heuristic ? uopd::OptMode::kHeuristic : uopd::OptMode::kOpts;
    request.opts = Opts(opts_text);
    return uopd::OptimizeKernel(std::move(ast), target, request);
  };
  for (int k = 0; k < entry->plan.kernels_size(); ++k) {
    if (kernel >= 0 && k != kernel) continue;
    auto ast = uopd::DecodeKernelAst(entry->plan.kernels(k).ast());
    if (!ast.ok()) return 1;
    auto start = std::chrono::steady_clock::now();
    auto optimized = optimize(*ast);
    const double optimize_ms =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3;
    if (!optimized.ok()) {
      std::printf("kernel %d: %s\n", k, optimized.status().ToString().c_str());
      continue;
    }
    if (search_seconds > 0) {
      uopd::SearchOptions search;
      search.budget = absl::Seconds(search_seconds);
      search.render = render;
      auto found = uopd::SearchKernelOpts(cpu, *ast, search);
      if (!found.ok()) {
        std::printf("kernel %d: search failed: %s\n", k, found.status().ToString().c_str());
      } else {
        std::printf("kernel %d: search: %s  %.3f ms (heuristics %.3f ms), %d candidates%s; %s\n", k,
                    uopd::OptsToString(found->opts).c_str(), found->seconds * 1e3,
                    found->heuristic_seconds * 1e3, found->candidates,
                    found->converged ? ", converged" : "", found->note.c_str());
      }
      continue;
    }
    std::string trace;
    auto cost = uopd::EstimateCpuKernelCost(optimized->ast, target, trace_cost ? &trace : nullptr);
    if (trace_cost) std::printf("%s", trace.c_str());
    std::printf(
        "kernel %d: %s  (optimized in %.1f ms; cost model: %.3g cycles, compute %.3g, memory "
        "%.3g)\n",
        k, uopd::OptsToString(optimized->applied).c_str(), optimize_ms,
        cost.ok() ? cost->Cycles() : -1.0, cost.ok() ? cost->compute_cycles : -1.0,
        cost.ok() ? cost->memory_cycles : -1.0);
    if (dump) {  // the AST the lowering reads: UPCAST and UNROLL written out and simplified
      auto lowered = uopd::LowerToLinear(optimized->ast, "k", uopd::CodegenTarget::CpuLoops());
      std::printf("%s\n", lowered.ok() ? uopd::PrintGraph(lowered->expanded->root).c_str()
                                       : lowered.status().ToString().c_str());
    }
    if (emit) {
      auto spec = (*device)->renderer().Render(optimized->ast, "k", render);
      std::printf("%s\n", spec.ok() ? spec->src.c_str() : spec.status().ToString().c_str());
    }
  }
  if (emit || dump || search_seconds > 0) return 0;
  // One kernel alone: its inputs are whatever the plan's buffers hold, so no comparison.
  uopd::v1::CorpusPlan plan = entry->plan;
  double rtol = 1e-3, atol = 1e-3;  // sums of thousands of terms in another order
  if (kernel >= 0) {
    auto only = plan.kernels(kernel);
    plan.clear_kernels();
    *plan.add_kernels() = only;
    rtol = atol = std::numeric_limits<double>::infinity();
  }
  uopd::KernelCache cache;
  uopd::CachingProgramSource inner(cache);
  uopd::bench::OptimizingSource source(inner, Opts(opts_text), target);
  uopd::CorpusRunOptions options;
  options.source = heuristic ? static_cast<uopd::ProgramSource*>(&inner) : &source;
  options.optimization.mode = uopd::OptMode::kHeuristic;
  options.optimization.render = render;
  options.pool = &pool;
  auto times = uopd::TimeCorpusPlan(**device, plan, options, reps, rtol, atol);
  if (!times.ok()) {
    std::printf("result: %s\n", times.status().ToString().substr(0, 300).c_str());
    return 1;
  }
  std::printf("kernel time: median %.3f ms over %d runs%s\n",
              1e3 * uopd::bench::Percentile(*times, 0.5), reps,
              kernel >= 0 ? "" : " (outputs match tinygrad's)");
  return 0;
}
