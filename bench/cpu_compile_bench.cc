// Compile latency per corpus kernel: uopd's LLVM 19 in a sandboxed compile worker (what the
// daemon does), and in process (LlvmCompiler), against a `clang-19 -O2 -c` subprocess on the
// same LLVM IR, interleaved in one run. Each kernel is optimized with the CPU heuristics first
// (OptimizeKernel, as CachingProgramSource does before rendering), so the IR compiled is the
// one the daemon compiles by default; uopd's columns include optimizing and rendering the AST,
// clang's starts from the rendered .ll file. --no-opt compiles the ASTs as written.
//
//   cpu_compile_bench [--clang PATH] [--uopd PATH] [--limit N] [--no-opt] CORPUS_DIR...
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/cpu/llvm_compiler.h"
#include "backends/cpu/llvm_renderer.h"
#include "bench/bench_util.h"
#include "core/corpus/corpus_file.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/optimize.h"
#include "core/wire/decode.h"
#include "core/worker/compile_worker_pool.h"

namespace {

// Seconds per kernel, in corpus order.
struct Latencies {
  std::vector<double> front, in_process, sandboxed, subprocess;
  std::vector<double> ratios, sandboxed_ratios;      // subprocess / in-process, / sandboxed
  std::vector<double> opt_box, opt_sub, opt_ratios;  // the kernels the heuristics changed
  int with_opts = 0;
};

void PrintReport(const Latencies& l, bool optimize) {
  const std::vector<double>&in_process = l.in_process, &sandboxed = l.sandboxed,
        &subprocess = l.subprocess, &ratios = l.ratios, &sandboxed_ratios = l.sandboxed_ratios,
        &front = l.front, &opt_box = l.opt_box, &opt_sub = l.opt_sub, &opt_ratios = l.opt_ratios;
  const int with_opts = l.with_opts;
  using uopd::bench::Percentile;
  std::printf("kernels: %zu (corpus cases, each timed 3x, median taken); %s: %d of them got opts\n",
              in_process.size(), optimize ? "heuristics on" : "as written (--no-opt)", with_opts);
  std::printf("uopd rows: optimize + render + compile; clang row: compile of the rendered .ll\n");
  std::printf("%-34s %12s %12s\n", "compile latency (ms)", "median", "p90");
  std::printf("%-34s %12.2f %12.2f\n", "uopd optimize + render only", 1e3 * Percentile(front, 0.5),
              1e3 * Percentile(front, 0.9));
  std::printf("%-34s %12.2f %12.2f\n", "uopd sandboxed worker -O3",
              1e3 * Percentile(sandboxed, 0.5), 1e3 * Percentile(sandboxed, 0.9));
  std::printf("%-34s %12.2f %12.2f\n", "uopd in-process LLVM -O3",
              1e3 * Percentile(in_process, 0.5), 1e3 * Percentile(in_process, 0.9));
  std::printf("%-34s %12.2f %12.2f\n", "clang-19 -O2 -c subprocess",
              1e3 * Percentile(subprocess, 0.5), 1e3 * Percentile(subprocess, 0.9));
  std::printf("speed-up (subprocess / sandboxed worker), per kernel: median %.1fx, p10 %.1fx\n",
              Percentile(sandboxed_ratios, 0.5), Percentile(sandboxed_ratios, 0.1));
  std::printf("speed-up (subprocess / in-process), per kernel: median %.1fx, p10 %.1fx\n",
              Percentile(ratios, 0.5), Percentile(ratios, 0.1));
  if (!opt_ratios.empty()) {
    std::printf(
        "the %zu kernels the heuristics changed: sandboxed worker median %.2f ms, clang %.2f ms, "
        "speed-up median %.1fx, min %.1fx\n",
        opt_ratios.size(), 1e3 * Percentile(opt_box, 0.5), 1e3 * Percentile(opt_sub, 0.5),
        Percentile(opt_ratios, 0.5), Percentile(opt_ratios, 0));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string clang = "clang-19";
  std::string uopd = UOPD_DAEMON_PATH;
  int limit = 1 << 30;
  bool optimize = true;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--clang" && i + 1 < argc)
      clang = argv[++i];
    else if (arg == "--uopd" && i + 1 < argc)
      uopd = argv[++i];
    else if (arg == "--limit" && i + 1 < argc)
      limit = std::atoi(argv[++i]);
    else if (arg == "--no-opt")
      optimize = false;
    else
      paths.push_back(arg);
  }
  auto files = uopd::ListCorpusFiles(paths);
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", files.status().ToString().c_str());
    return 2;
  }
  uopd::LlvmRenderer renderer;
  uopd::LlvmCompiler compiler;
  uopd::CompileWorkerPoolOptions options;
  options.executable = uopd;
  options.argv = {uopd, "compile-worker"};
  options.workers = 1;
  auto pool = uopd::CompileWorkerPool::Start(options);
  if (!pool.ok()) {
    std::fprintf(stderr, "%s\n", pool.status().ToString().c_str());
    return 2;
  }
  std::string dir = absl::StrCat("/tmp/uopd_compile_bench.", getpid());
  std::string mkdir = "mkdir -p " + dir;
  if (std::system(mkdir.c_str()) != 0) return 2;
  // The daemon's CPU device target: one thread per core.
  const uopd::OptTarget target =
      uopd::OptTargetFor("CPU", compiler.Target(),
                         static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  uopd::OptimizeRequest request;
  request.mode = optimize ? uopd::OptMode::kHeuristic : uopd::OptMode::kNone;
  // The AST optimized and rendered, as the daemon does before compiling.
  auto render =
      [&](const std::shared_ptr<const uopd::KernelAst>& ast) -> absl::StatusOr<uopd::ProgramSpec> {
    auto optimized = uopd::OptimizeKernel(ast, target, request);
    if (!optimized.ok()) return optimized.status();
    return renderer.Render(optimized->ast, ast->DefaultName());
  };
  Latencies l;
  std::vector<double>&in_process = l.in_process, &sandboxed = l.sandboxed,
  &subprocess = l.subprocess, &ratios = l.ratios, &sandboxed_ratios = l.sandboxed_ratios,
  &front = l.front, &opt_box = l.opt_box, &opt_sub = l.opt_sub, &opt_ratios = l.opt_ratios;
  int& with_opts = l.with_opts;
  for (const std::string& file : *files) {
    if (static_cast<int>(in_process.size()) >= limit) break;
    auto entry = uopd::LoadCorpusFile(file);
    if (!entry.ok() || entry->is_plan) continue;
    auto ast = uopd::DecodeKernelAst(entry->kase.ast());
    if (!ast.ok()) continue;
    auto optimized = uopd::OptimizeKernel(*ast, target, request);
    if (!optimized.ok()) continue;
    const bool changed = !optimized->applied.empty();
    with_opts += changed;
    auto spec = render(*ast);
    if (!spec.ok()) continue;
    std::string ll = absl::StrCat(dir, "/k.ll");
    std::ofstream(ll) << spec->src;
    std::string cmd = absl::StrCat(clang, " -O2 -c -Wno-override-module ", ll, " -o ", dir, "/k.o");
    double t_front =
        uopd::bench::Percentile(uopd::bench::Sample(1, 3, [&] { (void)render(*ast); }), 0.5);
    double t_in =
        uopd::bench::Percentile(uopd::bench::Sample(1, 3,
                                                    [&] {
                                                      auto s = render(*ast);
                                                      (void)compiler.CompileIr(s->src, s->name);
                                                    }),
                                0.5);
    double t_box = uopd::bench::Percentile(
        uopd::bench::Sample(1, 3,
                            [&] {
                              auto s = render(*ast);
                              if (!(*pool)->Compile("CPU", compiler.Target(), *s, nullptr).ok())
                                std::abort();
                            }),
        0.5);
    double t_sub = uopd::bench::Percentile(uopd::bench::Sample(0, 3,
                                                               [&] {
                                                                 if (std::system(cmd.c_str()) != 0)
                                                                   std::abort();
                                                               }),
                                           0.5);
    front.push_back(t_front);
    in_process.push_back(t_in);
    sandboxed.push_back(t_box);
    subprocess.push_back(t_sub);
    ratios.push_back(t_sub / t_in);
    sandboxed_ratios.push_back(t_sub / t_box);
    if (changed) {
      opt_box.push_back(t_box);
      opt_sub.push_back(t_sub);
      opt_ratios.push_back(t_sub / t_box);
    }
  }
  std::string cleanup = "rm -rf " + dir;
  (void)std::system(cleanup.c_str());
  PrintReport(l, optimize);
  return 0;
}
