// LowerCpuKernel: the CPU's code generation up to the linear program, in one place for the LLVM
// renderer (which spells the program) and the optimizer's cost model (which estimates how long
// it runs): tinygrad's algebra, EXP2/LOG2 as arithmetic, the vectorized range chosen, the other
// UPCAST/UNROLL ranges written out, and the lowering with the outer loop split across threads.
#ifndef UOPD_CORE_CODEGEN_CPU_LOWERING_H_
#define UOPD_CORE_CODEGEN_CPU_LOWERING_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/codegen/linear_program.h"
#include "core/ir/kernel_ast.h"

namespace uopd {

// Kernels with at least this many loop iterations split their outer loop across threads.
inline constexpr int64_t kDefaultMinParallelWork = int64_t{1} << 16;
// The most lanes a vector value gets (LLVM splits wider vectors into registers).
inline constexpr int64_t kMaxVectorLanes = 64;

struct CpuLoweringOptions {
  int64_t min_parallel_work = kDefaultMinParallelWork;
  // Lower as for a GPU (the grid mode of the shared lowering) with no vector lanes: how the GPU
  // lowering is checked on machines without a GPU.
  bool gpu_lowering = false;
};

struct CpuLowering {
  std::shared_ptr<const KernelAst> expanded;  // the AST the program's instructions point into
  LinearProgram program;                      // before Devectorize and Legalize
};

absl::StatusOr<CpuLowering> LowerCpuKernel(std::shared_ptr<const KernelAst> ast,
                                           const std::string& name,
                                           const CpuLoweringOptions& options = {});

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_CPU_LOWERING_H_
