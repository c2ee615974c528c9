// CudaRenderer: spells the codegen pipeline's GPU-lowered kernels (core/codegen/pipeline.h) as
// CUDA C for NVRTC.
//
// The outermost parallel ranges become one flattened thread index over a 1-D grid of
// `kBlockSize`-thread blocks (launch dims: global = blocks, local = threads per block, both
// possibly symbolic); reduction ranges stay loops, which the 32 lanes of a warp share when the
// kernel reads along them (core/codegen/warp_reduction.h). The kernel is
//   extern "C" __global__ void NAME(T0* data0, ..., long long var..., int* uopd_status)
// with buffers by slot, variables in var_names order, and a status word that a failed
// run-time bounds check sets to slot + 1 (first failure wins) before the thread returns.
// float16 and bfloat16 use CUDA's own headers (cuda_fp16.h, cuda_bf16.h), computing in float
// and rounding after every operation, as the CPU backend does.
#ifndef UOPD_BACKENDS_CUDA_CUDA_RENDERER_H_
#define UOPD_BACKENDS_CUDA_CUDA_RENDERER_H_

#include "core/codegen/linear_program.h"
#include "core/codegen/pipeline.h"
#include "core/codegen/warp_reduction.h"

namespace uopd {

// Immutable: safe for concurrent use.
class CudaRenderer : public SpellingRenderer {
 public:
  CudaRenderer() : SpellingRenderer(Target()) {}
  std::string Identity() const override;
  std::string Spell(const LoweredKernel& kernel) const override;

  // What CUDA C spells: CodegenTarget::CudaGrid, with native EXP2 and LOG2.
  static CodegenTarget Target();
};

// The CUDA C of a lowered kernel (exposed for tests).
std::string RenderCudaC(const LinearProgram& program, const WarpReductionPlan& warps);

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_CUDA_RENDERER_H_
