// OrcRuntime: loads compiled CPU objects in process with LLVM's ORC JIT (JITLink) and runs them.
//
// One LLJIT per CPU device; each loaded kernel gets its own JITDylib (so equal symbol names
// never clash), removed when the last Program referring to it goes away. Kernels whose outer
// loop is split run on the injected ThreadPool through the core_id/core_count variables.
#ifndef UOPD_BACKENDS_CPU_ORC_RUNTIME_H_
#define UOPD_BACKENDS_CPU_ORC_RUNTIME_H_

#include <atomic>
#include <memory>

#include "core/device/runtime.h"
#include "core/util/thread_pool.h"

namespace llvm::orc {
class LLJIT;
}

namespace uopd {

// Safe for concurrent use.
class OrcRuntime : public RuntimeFactory {
 public:
  // `pool` must outlive the runtime and every Program it loads; nullptr runs single-threaded.
  static absl::StatusOr<std::unique_ptr<OrcRuntime>> Create(ThreadPool* pool);
  ~OrcRuntime() override;

  absl::StatusOr<std::shared_ptr<Program>> Load(const CompiledKernel& kernel,
                                                const ProgramSpec& spec) override;

 private:
  OrcRuntime(std::unique_ptr<llvm::orc::LLJIT> jit, ThreadPool* pool);

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  ThreadPool* pool_;
  std::atomic<uint64_t> next_dylib_{0};
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_ORC_RUNTIME_H_
