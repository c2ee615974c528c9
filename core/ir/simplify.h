// SimplifyIndexArithmetic: algebraic simplification of integer-valued nodes (INDEX arithmetic in
// particular), the rules the lowering and the bounds proofs need: constant folding, identities
// (x+0, x*1, x//1, x%1), nested IDIV/MOD by constants, and MOD/IDIV/compare decided by value
// ranges. Float arithmetic is never touched: its rounding is part of the result.
#ifndef UOPD_CORE_IR_SIMPLIFY_H_
#define UOPD_CORE_IR_SIMPLIFY_H_

#include "absl/status/statusor.h"
#include "core/ir/graph.h"

namespace uopd {

// Returns the simplified root (the same pointer when nothing changed). Creates nodes in `graph`.
// Fails (INTERNAL) only if the rules do not reach a fixed point within their step limit, naming
// the node: that would be a bug in the rule table, not in the client's graph.
absl::StatusOr<const UOp*> SimplifyIndexArithmetic(Graph& graph, const UOp* root);

}  // namespace uopd

#endif  // UOPD_CORE_IR_SIMPLIFY_H_
