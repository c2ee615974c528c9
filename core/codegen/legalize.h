// Legalize: the IR's semantics that target languages leave undefined or spell differently,
// decided once for every backend as plain instructions of the linear program, so renderers
// only spell what they get (docs/IR.md is the contract; core/codegen's passes keep it):
//
// - IDIV/MOD are total: x/0 = 0 and x%0 = 0; for signed types MIN/-1 wraps to MIN and x%-1 = 0.
//   The divisor becomes one that is neither 0 nor (signed) -1 and the result is fixed up, unless
//   it is a constant that is neither. Renderers divide plainly.
// - SHL/SHR shift by the amount modulo the width (x86's behaviour), the amount in the value's
//   type. Renderers shift plainly (arithmetic right shifts for signed types).
// - Bools are bytes in memory: a bool load is a byte load compared with 0, a bool store
//   stores 0 or 1. Renderers never load or store a bool.
// - A cast to bool is x != 0 (NaN: true); a bitcast to or from bool or INDEX is a cast (a
//   byte's value; INDEX has no fixed width). Renderers cast to bool only from bool, and bitcast
//   only between types of one width.
// - A float-to-int cast starts from float32 or float64 (small floats are widened first) and
//   ends in a signed type or uint64 (a narrower unsigned target converts through int64 and
//   wraps). Renderers spell the saturating conversion (NaN: 0) and integer resizing.
// - MULACC is a multiply, then an add: rounded twice, never fused.
// - A load from a buffer of 0 elements (never valid: its bounds check fails first) is 0.
//
// Runs after Devectorize: what it inserts has the width of the instruction it guards, which the
// backend keeps as a vector or not as it kept that instruction. (float16/bfloat16/fp8 arithmetic
// in float32 with a rounding after every operation is still each renderer's: its accumulators
// would need an assignment the linear program does not have.)
#ifndef UOPD_CORE_CODEGEN_LEGALIZE_H_
#define UOPD_CORE_CODEGEN_LEGALIZE_H_

#include "core/codegen/linear_program.h"

namespace uopd {

LinearProgram Legalize(const LinearProgram& program);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_LEGALIZE_H_
