// Evaluating integer expressions (index arithmetic, symbolic sizes) for given variable values.
// Used for launch dimensions at run time and by tests that check value ranges by brute force.
#ifndef UOPD_CORE_IR_EVALUATE_H_
#define UOPD_CORE_IR_EVALUATE_H_

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/ir/value_range.h"

namespace uopd {

// Evaluates `node` with the values of its leaves (DEFINE_VAR and RANGE nodes) taken from
// `leaves`, with the IR's semantics (wrap to the dtype, IDIV/MOD truncating). Iterative.
// Fails with INVALID_ARGUMENT on a leaf without a value, an Invalid index, a division by zero
// or an op that is not integer arithmetic.
absl::StatusOr<Int128> EvaluateInt(const UOp* node,
                                   const absl::flat_hash_map<const UOp*, Int128>& leaves);

}  // namespace uopd

#endif  // UOPD_CORE_IR_EVALUATE_H_
