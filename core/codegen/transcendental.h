// DecomposeTranscendentals: EXP2 and LOG2 written as polynomial arithmetic on the float's bits,
// tinygrad's xexp2/xlog2 (uop/decompositions.py, 1 ULP, after SLEEF), for backends without a
// vector instruction for them. The point is speed: a libm call per element stops a loop from
// being vectorized, the decomposition is plain arithmetic that vectorizes like the rest. It is
// also what tinygrad's own CPU backend computes, so results agree with tinygrad to the bit
// pattern of the formula rather than to libm's.
//
// float32 and float64 are decomposed in their own precision, as tinygrad does (measured
// against correctly rounded results: exp2 within 1 unit in the last place, log2 within 3: the
// formula's (m-1)*reciprocal(m+1) rounds twice). Other float types go through float32 and back;
// for float16 that departs from tinygrad, whose float16 formula flushes exp2 below 2^-22 to
// zero and is 2.4 units off for log2: through float32 both are within rounding. tinygrad's log2
// also answers -inf for negative denormals below -2^-128 (its -0.0 test takes a reciprocal,
// which overflows); uopd answers NaN. SIN is left to
// the backend: its decomposition (Payne-Hanek reduction in 64-bit integers) is not a speed-up
// on a CPU.
#ifndef UOPD_CORE_CODEGEN_TRANSCENDENTAL_H_
#define UOPD_CORE_CODEGEN_TRANSCENDENTAL_H_

#include <memory>

#include "core/ir/kernel_ast.h"

namespace uopd {

// A new AST (own graph) without EXP2/LOG2 nodes; the same AST when it has none.
std::shared_ptr<const KernelAst> DecomposeTranscendentals(std::shared_ptr<const KernelAst> ast);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_TRANSCENDENTAL_H_
