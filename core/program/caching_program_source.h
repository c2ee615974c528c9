// CachingProgramSource: the ProgramSource of the daemon, three layers with one job each, as
// LLVM ORC stacks its IR, compile and link layers:
//
//   OptimizeLayer (the opts: heuristics, timed candidates, search) -> CompileLayer (render and
//   compile, through the compiled-byte cache, the leaf both consult) -> LoadLayer (loaded
//   programs per device, so a hit on a warm kernel neither renders, compiles nor loads).
//
// Callers ask for a program or a compile and never build a cache key.
#ifndef UOPD_CORE_PROGRAM_CACHING_PROGRAM_SOURCE_H_
#define UOPD_CORE_PROGRAM_CACHING_PROGRAM_SOURCE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cache/kernel_cache.h"
#include "core/plan/program_source.h"
#include "core/program/compile_layer.h"
#include "core/program/load_layer.h"
#include "core/program/optimize_layer.h"
#include "core/search/kernel_search.h"

namespace uopd {

// Safe for concurrent use. `cache` must outlive it.
class CachingProgramSource : public ProgramSource {
 public:
  // `default_mode` is what OptMode::kDefault requests get (the heuristics, unless the server
  // is set to search). `search` bounds searches (its `stop` is ignored: each call brings its own).
  explicit CachingProgramSource(KernelCache& cache, size_t max_loaded_programs = 4096,
                                OptMode default_mode = OptMode::kHeuristic,
                                SearchOptions search = {})
      : cache_(cache),
        optimize_(cache, default_mode, search),
        compile_(cache, optimize_),
        load_(cache, optimize_, compile_, max_loaded_programs) {}

  // CompileLayer::Compile.
  absl::StatusOr<CompileResult> Compile(const Device& device, std::shared_ptr<const KernelAst> ast,
                                        const OptimizeRequest& optimization = {},
                                        const StopFlag* stop = nullptr) {
    return compile_.Compile(device, std::move(ast), optimization, stop);
  }
  absl::StatusOr<CompileResult> Compile(const std::string& base_device, const CompilerPair& pair,
                                        std::shared_ptr<const KernelAst> ast,
                                        const OptimizeRequest& optimization = {},
                                        const StopFlag* stop = nullptr) {
    return compile_.Compile(base_device, pair, std::move(ast), optimization, stop);
  }
  // CompileLayer::CompileSource.
  absl::StatusOr<CompileResult> CompileSource(const Device& device, ProgramSpec spec,
                                              const std::string& source_digest,
                                              const StopFlag* stop = nullptr) {
    return compile_.CompileSource(device, std::move(spec), source_digest, stop);
  }
  // LoadLayer::Get.
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(Device& device,
                                                           std::shared_ptr<const KernelAst> ast,
                                                           const OptimizeRequest& optimization,
                                                           const StopFlag* stop) override {
    return load_.Get(device, std::move(ast), optimization, stop);
  }

  OptimizeLayer& optimizer() { return optimize_; }
  KernelCache& cache() { return cache_; }

 private:
  KernelCache& cache_;
  OptimizeLayer optimize_;
  CompileLayer compile_;
  LoadLayer load_;
};

}  // namespace uopd

#endif  // UOPD_CORE_PROGRAM_CACHING_PROGRAM_SOURCE_H_
