// Value ranges: proven [min, max] bounds of integer-valued nodes (INDEX arithmetic, integer and
// bool values), from RANGE ends, DEFINE_VAR bounds, constants and dtype limits.
//
// Bounds are sound: every value a node can take at run time lies within them, wrap-around
// included (an operation that may overflow its dtype gets the dtype's whole range). They are what
// memory-safety proofs and the int32/int64 choice for INDEX stand on.
#ifndef UOPD_CORE_IR_VALUE_RANGE_H_
#define UOPD_CORE_IR_VALUE_RANGE_H_

#include "absl/container/flat_hash_map.h"
#include "core/ir/uop.h"

namespace uopd {

using Int128 = __int128;

// Bounds are computed in 128 bits and saturate at +-2^125: far beyond any dtype (tinygrad's
// INDEX is wider than 64 bits), yet the sum of two saturated values still fits, and a product
// is checked before it is formed.
inline constexpr Int128 kSaturatedMax = Int128{1} << 125;
inline Int128 Saturate(Int128 v) {
  return v < -kSaturatedMax ? -kSaturatedMax : (v > kSaturatedMax ? kSaturatedMax : v);
}
inline Int128 SaturatingAdd(Int128 a, Int128 b) { return Saturate(Saturate(a) + Saturate(b)); }
inline Int128 SaturatingMul(Int128 a, Int128 b) {
  a = Saturate(a);
  b = Saturate(b);
  const Int128 abs_a = a < 0 ? -a : a, abs_b = b < 0 ? -b : b;
  if (abs_a != 0 && abs_b > kSaturatedMax / abs_a) {
    return (a < 0) != (b < 0) ? -kSaturatedMax : kSaturatedMax;
  }
  return a * b;
}

struct Interval {
  Int128 min = 0;
  Int128 max = 0;
  bool Contains(Int128 v) const { return min <= v && v <= max; }
  bool IsConst() const { return min == max; }
};

// The whole range of an integer-like dtype (INDEX as int64, BOOL as [0, 1]).
Interval DTypeRange(Scalar scalar);
// The identity of a REDUCE `op` (ADD, MUL, MAX) as a CONST argument of `scalar`: 0, 1, or the
// lowest value (-inf for floats).
Arg ReduceIdentityArg(Op op, Scalar scalar);
// `value` wrapped to the dtype's width, two's complement, as the dtype interprets it.
Int128 WrapToDType(Int128 value, Scalar scalar);
// The integer value of an integer or bool CONST, wrapped to its dtype.
Int128 ConstIntValue(const UOp& node);

// Computes and memoizes ranges on demand. One thread at a time; iterative (no recursion).
class ValueRanges {
 public:
  ValueRanges() = default;
  // `overrides` pin the range of chosen nodes (say a RANGE narrowed by a mask condition).
  explicit ValueRanges(absl::flat_hash_map<const UOp*, Interval> overrides)
      : memo_(std::move(overrides)) {}

  // REQUIRES: node has an integer-like, non-pointer dtype. Non-integer nodes give their dtype's
  // range (a load of int32 is [INT32_MIN, INT32_MAX]).
  Interval Get(const UOp* node);

  // Whether integer `node`'s operation may wrap around its dtype: its exact result over its
  // sources' ranges leaves the dtype's range (which is then the range Get gives).
  bool MayWrap(const UOp* node);

 private:
  Interval Compute(const UOp& node);
  // `node`'s range before wrapping to its dtype. REQUIRES: its sources' ranges are memoized.
  Interval Unwrapped(const UOp& node);

  absl::flat_hash_map<const UOp*, Interval> memo_;
};

}  // namespace uopd

#endif  // UOPD_CORE_IR_VALUE_RANGE_H_
