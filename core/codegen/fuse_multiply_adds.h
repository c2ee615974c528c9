// FuseMultiplyAdds: for requests that allow it (RenderOptions::allow_fma), a float32 or float64
// addition whose operand is a product used nowhere else becomes one fused multiply-add, rounded
// once (docs/IR.md, "Fused multiply-adds"): what clang's and NVCC's default contraction gives
// tinygrad's own C and CUDA kernels, decided here once so every renderer spells the same fusions.
//
// In the program it returns, and only there, an ALU MULACC (a, b, c) is fma(a, b, c), and an
// accumulator update with op MULACC and sources (acc, a, b) is acc = fma(a, b, acc). Runs after
// Legalize (which leaves no MULACC of its own: the IR's is two roundings). The multiply and the
// add must be in the same loop, so no product moves into a loop it was hoisted out of.
#ifndef UOPD_CORE_CODEGEN_FUSE_MULTIPLY_ADDS_H_
#define UOPD_CORE_CODEGEN_FUSE_MULTIPLY_ADDS_H_

#include "core/codegen/linear_program.h"

namespace uopd {

LinearProgram FuseMultiplyAdds(const LinearProgram& program);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_FUSE_MULTIPLY_ADDS_H_
