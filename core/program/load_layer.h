// LoadLayer: the last layer of a program's way to the device (optimize -> compile -> load):
// loads a kernel's compiled bytes onto a device and keeps the loaded program, so a call on a
// warm kernel neither optimizes, renders, compiles nor loads. Kernels run with the metadata of
// their own AST (buffer sizes, launch dimensions, variable bounds), never with what a cache
// entry says: an entry's bytes are the only thing taken from it, and an entry whose metadata
// disagrees with the AST, or that the device cannot load, is dropped and compiled anew.
#ifndef UOPD_CORE_PROGRAM_LOAD_LAYER_H_
#define UOPD_CORE_PROGRAM_LOAD_LAYER_H_

#include <list>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/plan/program_source.h"
#include "core/program/compile_layer.h"
#include "core/program/optimize_layer.h"

namespace uopd {

// Safe for concurrent use. `cache`, `optimizer` and `compiler` must outlive it.
class LoadLayer {
 public:
  LoadLayer(KernelCache& cache, OptimizeLayer& optimizer, CompileLayer& compiler,
            size_t max_loaded_programs)
      : cache_(cache),
        optimizer_(optimizer),
        compiler_(compiler),
        max_loaded_(max_loaded_programs) {}

  // `ast` optimized as `optimization` asks, compiled (or found in the cache) and loaded on
  // `device`; the most recently used `max_loaded_programs` stay loaded.
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(Device& device,
                                                           std::shared_ptr<const KernelAst> ast,
                                                           const OptimizeRequest& optimization,
                                                           const StopFlag* stop);

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const LoadedProgram>>>;

  // Keeps `loaded` under `memo_key` unless a racer did first; returns the one kept.
  std::shared_ptr<const LoadedProgram> Keep(const std::string& memo_key,
                                            std::shared_ptr<const LoadedProgram> loaded);

  KernelCache& cache_;
  OptimizeLayer& optimizer_;
  CompileLayer& compiler_;
  const size_t max_loaded_;
  absl::Mutex mu_;
  Lru loaded_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<std::string, Lru::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd

#endif  // UOPD_CORE_PROGRAM_LOAD_LAYER_H_
