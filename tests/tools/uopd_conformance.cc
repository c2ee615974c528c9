// uopd-conformance: runs corpus cases and plans through the Device API (no daemon) and compares
// each output with tinygrad's. One line per failure, then "N passed, M failed"; exit 0 only when
// nothing failed. Plans run as execution plans (independent kernels in parallel).
//
//   uopd-conformance [--device CPU|CUDA:n] [--optimize heuristic|none|search|'OPTS']
//                    [--random-opts SEED] [--verbose] [--dump] PATH...
//
// --random-opts gives every kernel a random valid opt list (up to four opts, drawn from SEED and
// the kernel's AST hash) in place of the heuristics: any valid list must keep the kernel's
// meaning. A failure names the lists its kernels got.
//
// --dump prints each kernel's lowered program (loops, accumulators, loads, stores, bounds
// checks) with its count of accesses proven in bounds and checked at run time.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#ifdef UOPD_WITH_CPU
#include "backends/cpu/cpu_device.h"
#endif
#ifdef UOPD_WITH_CUDA
#include "backends/cuda/cuda_device.h"
#endif
#include "core/codegen/lower.h"
#include "core/corpus/corpus_runner.h"
#include "core/program/caching_program_source.h"
#include "core/wire/decode.h"
#include "tests/testing/random_opts_source.h"

namespace {

void Dump(const uopd::CorpusEntry& entry) {
  std::vector<const uopd::v1::Graph*> asts;
  if (entry.is_plan) {
    for (const auto& kernel : entry.plan.kernels()) asts.push_back(&kernel.ast());
  } else {
    asts.push_back(&entry.kase.ast());
  }
  for (const uopd::v1::Graph* wire : asts) {
    auto ast = uopd::DecodeKernelAst(*wire);
    if (!ast.ok()) continue;
    auto program = uopd::LowerKernel(**ast, (*ast)->DefaultName(), {});
    std::printf("%s\n",
                program.ok() ? program->Dump().c_str() : program.status().ToString().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "CPU", optimize;
  uint64_t random_seed = 0;
  bool verbose = false, dump = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device_name = argv[++i];
    } else if (absl::StartsWith(arg, "--device=")) {
      device_name = arg.substr(9);
    } else if (arg == "--verbose" || arg == "-v") {
      verbose = true;
    } else if (arg == "--random-opts" && i + 1 < argc) {
      random_seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--optimize" && i + 1 < argc) {
      optimize = argv[++i];
    } else if (arg == "--dump") {
      dump = true;
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: uopd-conformance [--device CPU|CUDA:n] [--verbose] [--dump] PATH...\n");
      return 0;
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: uopd-conformance [--device CPU] [--verbose] PATH...\n");
    return 2;
  }
  uopd::ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  uopd::DeviceRegistry registry;
#ifdef UOPD_WITH_CPU
  auto cpu = uopd::CreateCpuDevice(&pool);
  if (!cpu.ok()) {
    std::fprintf(stderr, "cannot create the CPU device: %s\n", cpu.status().ToString().c_str());
    return 2;
  }
  registry.Add(std::move(*cpu));
#endif
#ifdef UOPD_WITH_CUDA
  if (auto gpus = uopd::CreateCudaDevices(); gpus.ok()) {
    for (auto& gpu : *gpus) registry.Add(std::move(gpu));
  } else if (absl::StartsWith(device_name, "CUDA") || absl::StartsWith(device_name, "cuda")) {
    std::fprintf(stderr, "no CUDA device: %s\n", std::string(gpus.status().message()).c_str());
    return 2;
  }
#endif
  auto device = registry.Get(device_name);
  if (!device.ok()) {
    std::fprintf(stderr, "%s\n", device.status().ToString().c_str());
    return 2;
  }
  auto files = uopd::ListCorpusFiles(paths);
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", files.status().ToString().c_str());
    return 2;
  }
  uopd::KernelCache cache;  // no tiers: each kernel compiles once per run
  uopd::CachingProgramSource source(cache);
  uopd::testing::RandomOptsSource random_opts(source, random_seed);
  uopd::CorpusRunOptions options{&source, &pool};
  if (random_seed != 0) options.source = &random_opts;
  if (!optimize.empty()) {
    if (optimize == "heuristic") {
      options.optimization.mode = uopd::OptMode::kHeuristic;
    } else if (optimize == "none") {
      options.optimization.mode = uopd::OptMode::kNone;
    } else if (optimize == "search") {
      options.optimization.mode = uopd::OptMode::kSearch;
    } else {
      auto opts = uopd::ParseOptList(optimize);  // the same list for every kernel
      if (!opts.ok()) {
        std::fprintf(stderr, "--optimize: %s\n", opts.status().ToString().c_str());
        return 2;
      }
      options.optimization = {uopd::OptMode::kOpts, *opts};
    }
  }
  int passed = 0, failed = 0;
  for (const std::string& file : *files) {
    auto entry = uopd::LoadCorpusFile(file);
    if (dump && entry.ok()) Dump(*entry);
    absl::Status status =
        entry.ok() ? uopd::RunCorpusEntry(**device, *entry, options) : entry.status();
    if (status.ok()) {
      ++passed;
      if (verbose) std::printf("PASS %s\n", file.c_str());
    } else {
      ++failed;
      std::printf("FAIL %s: %s\n", file.c_str(), status.ToString().c_str());
      if (random_seed != 0 && entry.ok()) {
        std::printf("  opts: %s\n", random_opts.Describe(*entry).c_str());
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
