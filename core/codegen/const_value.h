// ConstValue: the value a constant instruction holds, decided once for every backend: integers
// wrap to their width, floats round to their format (small floats by the support library's
// rounding), bools are 0 or 1, whatever kind of argument the constant was written with. Renderers
// spell its bits and decide nothing (a NaN keeps its sign and payload on every backend).
#ifndef UOPD_CORE_CODEGEN_CONST_VALUE_H_
#define UOPD_CORE_CODEGEN_CONST_VALUE_H_

#include <cstdint>

#include "core/codegen/linear_program.h"

namespace uopd {

struct ConstValue {
  // Floats: the bits in the dtype's format, in the low bits (float64 all 64, float32 32,
  // float16/bfloat16 16, fp8 8). Integers (INDEX at the program's index width): the value
  // wrapped to the width, as two's complement sign-extended to 64 bits for signed types and
  // zero-extended for unsigned ones. Bools: 0 or 1.
  uint64_t bits = 0;

  int64_t as_int() const { return static_cast<int64_t>(bits); }
  double as_double() const;  // float64 and float32 constants
};

// Lane `lane` of a constant (its `arg.ints` lanes when it has them).
ConstValue DecodeConst(const Instr& constant, int index_bits, int lane = 0);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_CONST_VALUE_H_
