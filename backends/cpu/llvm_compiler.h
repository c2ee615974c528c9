// LlvmCompiler: LLVM IR text to a relocatable ELF object, with LLVM 19 in process.
//
// Parse, link the support library (core/util/kernel_support.c), verify, optimize with the new pass
// manager at O3, and emit a position-independent object for the host target. Output depends only
// on the source and the target, so equal kernels compile to identical bytes.
#ifndef UOPD_BACKENDS_CPU_LLVM_COMPILER_H_
#define UOPD_BACKENDS_CPU_LLVM_COMPILER_H_

#include <cstdint>

#include "backends/cpu/host_target.h"
#include "core/device/compiler.h"

namespace uopd {

// The largest stack frame a kernel may have. Kernels run on request and thread-pool threads,
// whose stacks the daemon makes at least 8 MiB (kKernelThreadStackBytes, core/util/large_stack.h)
// and which are already in use below the kernel: a bigger frame would step over the guard page
// into another thread's memory or end the daemon. A compile whose frame is larger fails with
// RESOURCE_EXHAUSTED.
inline constexpr uint64_t kMaxKernelFrameBytes = uint64_t{1} << 20;

// Safe for concurrent use: every compile has its own LLVMContext and TargetMachine.
class LlvmCompiler : public Compiler {
 public:
  explicit LlvmCompiler(HostTarget target = GetHostTarget());
  std::string Target() const override { return target_.Describe(); }
  std::string Identity() const override;

  // Compiles LLVM IR text with entry `entry` (exposed for benchmarks).
  absl::StatusOr<CompiledKernel> CompileIr(const std::string& ir, const std::string& entry) const;

 private:
  absl::StatusOr<CompiledKernel> CompileImpl(const ProgramSpec& spec,
                                             const CompileOptions& options) const override;
  HostTarget target_;
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_LLVM_COMPILER_H_
