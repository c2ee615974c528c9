// ExpandRanges: the first codegen pass after the optimizer. Ranges the optimizer typed UPCAST or
// UNROLL (and ranges of one iteration) stop being loops: their iterations are written out.
//
// - A range an END closes: the statement is repeated once per value of the range, as a GROUP
//   (an UPCAST output axis: several outputs computed per loop iteration).
// - A range a REDUCE closes: the reduced value is written once per value, and the REDUCE folds
//   them in order into its accumulator, acc = ((acc op v0) op v1) ... as tinygrad does. The
//   lanes travel as the sources of a CONTRACT node that is the REDUCE's value: an internal form
//   the lowering understands and the wire never carries.
//
// - A tensor core's instruction (the TC opt, core/opt/scheduler.h): CONTRACT(x, ranges...)
//   becomes the VECTORIZE of x for every value of the ranges (first range slowest), a thread's
//   fragment; UNROLL(wmma, ranges...) becomes the GEP of the lane the ranges' values number.
//
// Values that do not depend on an expanded range are shared between the copies (the graph is
// hash-consed), which is what makes register tiling pay: a matmul's A element loaded once per
// row lane, its B element once per column lane. Ranges whose expansion would pass `max_lanes`
// copies per statement stay loops (same meaning, no speed-up).
#ifndef UOPD_CORE_CODEGEN_EXPAND_H_
#define UOPD_CORE_CODEGEN_EXPAND_H_

#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "core/ir/kernel_ast.h"

namespace uopd {

struct ExpandOptions {
  int64_t max_lanes = 1024;  // copies of one statement or reduced value
  // A range kept as a range although typed UPCAST/UNROLL (the lowering vectorizes it); null
  // for none.
  const UOp* keep = nullptr;
};

// A new AST (own graph) with the expanded ranges written out. The same AST when none is.
// INVALID_ARGUMENT naming the node for a tensor core's UNROLL outside the END or REDUCE whose
// ranges number its lanes.
absl::StatusOr<std::shared_ptr<const KernelAst>> ExpandRanges(std::shared_ptr<const KernelAst> ast,
                                                              const ExpandOptions& options = {});

// Whether a RANGE is one ExpandRanges writes out (UPCAST/UNROLL of constant size, or size 1).
bool IsExpandedRange(const UOp* range);

// Whether `node` is the TC opt's CONTRACT or UNROLL over ranges (sources 1..), which
// ExpandRanges writes out.
bool IsFragmentForm(const UOp* node);

// The ranges some AFTER depends on: iterations that order memory (a store read back by the
// next iteration), which must run one after another. They stay loops whatever their type.
absl::flat_hash_set<const UOp*> RangesOrderingMemory(const UOp* root);

// The RANGE of `ast` with argument `arg` (a range's copy in a rewritten AST); null if none.
const UOp* FindRange(const KernelAst& ast, const Arg& arg);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_EXPAND_H_
