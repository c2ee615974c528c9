// tinygrad 0.14's kernel AST dialect, spelled in 0.12's: what a kernel means is close between
// the two, its spelling is not (docs/IR.md, "The tinygrad 0.14 dialect"). The one IR inside
// uopd speaks 0.12's vocabulary, so a 0.14 graph is rewritten into it before decoding, and a
// kernel that means the same in both gets the same AST hash (one cache for both).
//
//   0.14                                   0.12 (the IR)
//   PARAM buffer (slot, element dtype,     DEFINE_GLOBAL (pointer dtype, size = the shape's
//     shape source)                          product, slot)
//   PARAM variable (slot -1, name, bounds) DEFINE_VAR INDEX (name, bounds)
//   WEAKINT / WEAKFLOAT                    INDEX / FLOAT32 where nothing decides; a literal takes
//                                            the type its consumer gives it
//   CDIV, CMOD                             IDIV, MOD
//   FLOORDIV, FLOORMOD (signed)            IDIV/MOD corrected where the remainder's sign differs
//                                            from the divisor's (folded away where it cannot)
//   STACK                                  VECTORIZE
//   REDUCE (op, 0)                         REDUCE op
//   one INDEX read and stored through      a value INDEX and a pointer-typed target INDEX
//   Invalid (a BOOL CONST)                 Invalid of its consumer's type
//   STORE(idx, WHERE(c, v, Invalid))       STORE(INDEX(buf, WHERE(c, idx, Invalid)), v)
//   a weak value where a type is wanted    CAST to that type (a RANGE stored into int32)
//   RANGE WEAK / LOOP                      RANGE LOOP / OUTER (stays serial)
#ifndef UOPD_CORE_WIRE_TINYGRAD_0_14_H_
#define UOPD_CORE_WIRE_TINYGRAD_0_14_H_

#include "absl/status/statusor.h"
#include "uopd/v1/graph.pb.h"

namespace uopd {

// The same kernel in the 0.12 dialect, or INVALID_ARGUMENT naming the node (by its index in
// `graph`) and what it cannot be. `graph.dialect()` must be TINYGRAD_0_14; `max_nodes` bounds
// the input (the decoder bounds the result).
absl::StatusOr<v1::Graph> TranslateTinygrad014(const v1::Graph& graph, int64_t max_nodes);

}  // namespace uopd

#endif  // UOPD_CORE_WIRE_TINYGRAD_0_14_H_
