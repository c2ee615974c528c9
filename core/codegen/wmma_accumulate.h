// FoldWmmaAccumulators: a reduction over tensor core instructions as the hardware does it.
// Lowered as written, each instruction of a K loop starts from C = 0 and the reduction adds
// its D lane by lane into scalar accumulators: a register copy and an addition per element
// and step beside every mma.sync. Where the accumulators are the reduction's only use of D,
// the instruction takes them as its C and writes D back into them (kWmmaInto), as tinygrad's
// devectorizer folds WMMA + add: one rounding sequence inside the unit instead of a sum
// rounded outside it, which is what a tensor core's result means anyway.
#ifndef UOPD_CORE_CODEGEN_WMMA_ACCUMULATE_H_
#define UOPD_CORE_CODEGEN_WMMA_ACCUMULATE_H_

#include "core/codegen/linear_program.h"

namespace uopd {

// Each kWmma whose C is zeros and each of whose lanes is only extracted for one ADD into an
// accumulator of its own, in the same loop body with nothing else touching those accumulators
// in between, becomes a kWmmaInto those accumulators; the extracts and updates go. Other
// instructions are unchanged.
LinearProgram FoldWmmaAccumulators(const LinearProgram& program);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_WMMA_ACCUMULATE_H_
