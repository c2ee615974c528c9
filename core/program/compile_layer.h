// CompileLayer: the second layer of a program's way to the device (optimize -> compile ->
// load): renders a kernel with the opts the OptimizeLayer chose and compiles it, through the
// compiled-byte cache (core/cache/kernel_cache.h), the leaf it consults: a kernel is rendered
// and compiled on a miss only, once for concurrent callers. Also compiles source a client
// rendered itself. Callers never build cache keys: this layer does.
#ifndef UOPD_CORE_PROGRAM_COMPILE_LAYER_H_
#define UOPD_CORE_PROGRAM_COMPILE_LAYER_H_

#include <memory>
#include <string>
#include <vector>

#include "core/cache/cache_key.h"
#include "core/cache/kernel_cache.h"
#include "core/device/device.h"
#include "core/program/optimize_layer.h"

namespace uopd {

struct CompileResult {
  CacheKey key;
  std::string key_hex;
  CacheLookup lookup;
  std::vector<Opt> applied;  // the opts the kernel was optimized with
};

// Safe for concurrent use. `cache` and `optimizer` must outlive it.
class CompileLayer {
 public:
  CompileLayer(KernelCache& cache, OptimizeLayer& optimizer)
      : cache_(cache), optimizer_(optimizer) {}

  // The compiled entry for `ast`, optimized as `optimization` asks, on `device`, from the cache
  // or compiled now. A compile is abandoned (CANCELLED) once `stop` is set.
  absl::StatusOr<CompileResult> Compile(const Device& device, std::shared_ptr<const KernelAst> ast,
                                        const OptimizeRequest& optimization, const StopFlag* stop);
  // The same for a renderer and compiler not bound to a device (compiling for a target).
  absl::StatusOr<CompileResult> Compile(const std::string& base_device, const CompilerPair& pair,
                                        std::shared_ptr<const KernelAst> ast,
                                        const OptimizeRequest& optimization, const StopFlag* stop);

  // The cache's entry for `spec` (`pair` rendered it from `key`'s AST with `key`'s opts), or
  // `spec` compiled by `pair` now and stored.
  absl::StatusOr<CacheLookup> CompileSpec(const CompilerPair& pair, const ProgramSpec& spec,
                                          const CacheKey& key, const StopFlag* stop);

  // The compiled entry for source a client rendered itself (`spec.src`, described by `spec`),
  // from the cache or compiled now, keyed on `device`'s base key, its compiler and
  // `source_digest` (a digest of the source and its stated metadata as the client sent them).
  // What the compiler rejects is the client's source: INVALID_ARGUMENT.
  absl::StatusOr<CompileResult> CompileSource(const Device& device, ProgramSpec spec,
                                              const std::string& source_digest,
                                              const StopFlag* stop);

 private:
  absl::StatusOr<CompileResult> CompileFor(const std::string& base_device, const CompilerPair& pair,
                                           int threads, std::shared_ptr<const KernelAst> ast,
                                           const OptimizeRequest& optimization,
                                           const StopFlag* stop);

  KernelCache& cache_;
  OptimizeLayer& optimizer_;
};

// Renders `ast` with `pair`'s renderer, on a stack deep enough for the IR's depth limit
// (core/util/large_stack.h).
absl::StatusOr<ProgramSpec> RenderOnCompileStack(const CompilerPair& pair,
                                                 const std::shared_ptr<const KernelAst>& ast,
                                                 const RenderOptions& options);

}  // namespace uopd

#endif  // UOPD_CORE_PROGRAM_COMPILE_LAYER_H_
