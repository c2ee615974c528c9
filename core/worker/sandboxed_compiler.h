// SandboxedCompiler: a backend's compiler run in the daemon's compile workers. It answers
// Target() and Identity() from the backend's compiler (so cache keys do not change), and sends
// every compile to the pool, where the worker makes the same compiler and runs it sandboxed.
#ifndef UOPD_CORE_WORKER_SANDBOXED_COMPILER_H_
#define UOPD_CORE_WORKER_SANDBOXED_COMPILER_H_

#include <memory>
#include <string>

#include "core/device/compiler.h"
#include "core/worker/compile_worker_pool.h"

namespace uopd {

class SandboxedCompiler : public Compiler {
 public:
  // `pool` must outlive this.
  SandboxedCompiler(std::string base_device, std::unique_ptr<Compiler> backend,
                    CompileWorkerPool* pool)
      : base_device_(std::move(base_device)), backend_(std::move(backend)), pool_(pool) {}

  std::string Target() const override { return backend_->Target(); }
  std::string Identity() const override { return backend_->Identity(); }

 private:
  absl::StatusOr<CompiledKernel> CompileImpl(const ProgramSpec& spec,
                                             const CompileOptions& options) const override {
    return pool_->Compile(base_device_, backend_->Target(), spec, options.stop);
  }

  std::string base_device_;
  std::unique_ptr<Compiler> backend_;
  CompileWorkerPool* pool_;
};

// Wraps every compiler a backend makes into a SandboxedCompiler on `pool`.
inline CompilerWrapper SandboxIn(CompileWorkerPool* pool) {
  return [pool](const std::string& base_device, std::unique_ptr<Compiler> compiler) {
    return std::make_unique<SandboxedCompiler>(base_device, std::move(compiler), pool);
  };
}

}  // namespace uopd

#endif  // UOPD_CORE_WORKER_SANDBOXED_COMPILER_H_
