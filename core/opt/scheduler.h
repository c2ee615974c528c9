// Scheduler: applies Opts to a kernel AST the way tinygrad 0.12's Scheduler does
// (tinygrad/codegen/opt/postrange.py; docs/OPTIMIZER.md sections 3-5): same axis numbering,
// same range splits and substitutions, same checks. Applying a case's opts to its pre-opt AST
// gives tinygrad's optimized AST node for node (same AST hash).
//
// An optimized AST is still a kernel AST: its RANGEs carry the AxisTypes the opts chose
// (UPCAST, UNROLL, THREAD, LOCAL, ...), which code generation honours for speed and which never
// change what the kernel computes.
#ifndef UOPD_CORE_OPT_SCHEDULER_H_
#define UOPD_CORE_OPT_SCHEDULER_H_

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/ir/graph.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/opt.h"
#include "core/opt/opt_target.h"

namespace uopd {

class Scheduler {
 public:
  // Copies `ast` (a kernel SINK after the pre-opt passes). On targets with locals, output LOOP
  // ranges become GLOBAL first, as tinygrad's convert_loop_to_global does.
  Scheduler(const KernelAst& ast, OptTarget target);

  // The axes opts refer to: every RANGE of size > 1, sorted by (position of its type, ids).
  std::vector<const UOp*> Axes() const;
  // Applies `opt`: INVALID_ARGUMENT with tinygrad's reason when the opt is not valid here
  // ("4 can't divide 13", "don't upcast more than 16", ...). The AST is unchanged then.
  absl::Status Apply(const Opt& opt);

  const std::vector<Opt>& applied() const { return applied_; }
  // After a TC opt: what is left of its N, M and K ranges (tinygrad's _apply_tc_opt returns
  // them); null before.
  const std::array<const UOp*, 3>& tensor_core_axes() const { return tensor_core_axes_; }
  bool dont_use_locals() const { return dont_use_locals_; }
  const OptTarget& target() const { return target_; }
  // The current AST (range lists may still hold the expressions that replaced split ranges).
  const UOp* root() const { return root_; }

  // The optimized AST: END/REDUCE range lists rewritten to the plain ranges they now hold,
  // hashed (unless `hash` is false: a candidate only costed, never cached), in a graph of its
  // own.
  std::shared_ptr<const KernelAst> Finish(bool hash = true) const;

 private:
  // The axis `opt` names (tinygrad's real_axis), or INVALID_ARGUMENT.
  absl::StatusOr<const UOp*> RealAxis(const Opt& opt) const;
  // Splits `range` by `amount` into itself (size / amount) and a new range of `type`:
  // every use becomes old * amount + new (new * (size / amount) + old when `top`). With
  // `given`, that expression stands for the new range (the TC opt's warp thread bits). The
  // shortened range is stored to `kept` when not null.
  absl::Status ShiftTo(const UOp* range, int64_t amount, AxisType type, bool top,
                       const UOp** kept = nullptr, const UOp* given = nullptr);
  // tinygrad's _apply_tc_opt: the ranges of the first reduction's two inputs and of its
  // reduction split into a tensor core's layout; with use_tensor_cores 1 the reduction then
  // becomes the core's instruction (ReplaceByWmma), with 2 the shape alone is applied.
  absl::Status ApplyTensorCore(const Opt& opt);
  // Replaces the reduction that `tc`'s K unrolls split by UNROLL(WMMA(CONTRACT(a),
  // CONTRACT(b), 0)), each operand's index permuted to the core's fragment layout, and an
  // outer REDUCE ADD over the reduction's other ranges. `factors`: what each factor of
  // tc.BaseShape() became (a warp bit's expression, an UPCAST or UNROLL range).
  absl::Status ReplaceByWmma(const TensorCore& tc, const std::vector<const UOp*>& factors);
  absl::Status PadTo(const UOp* range, int64_t multiple);
  absl::Status Swap(const UOp* a, const UOp* b);
  // Output LOOP ranges closed by a top-level END: what GLOBAL/THREAD may be made of.
  std::vector<const UOp*> GlobalizableRanges() const;
  const UOp* Substitute(const UOp* root, const std::vector<std::pair<const UOp*, const UOp*>>& map);
  const UOp* IndexConst(int64_t v) { return graph_->ConstInt(Scalar::kIndex, v); }

  std::unique_ptr<Graph> graph_;
  const UOp* root_ = nullptr;
  OptTarget target_;
  std::vector<Opt> applied_;
  bool dont_use_locals_ = false;
  std::array<const UOp*, 3> tensor_core_axes_ = {nullptr, nullptr, nullptr};
  int64_t next_range_id_ = 0;
};

// The RANGEs of `expr` in tinygrad's toposort order: depth first, sources in order, each node
// after its sources.
std::vector<const UOp*> RangesInOrder(const UOp* expr);

// Copies the nodes of `root` (from any graph) into `graph`; returns the copy of `root`.
const UOp* CopyInto(Graph& graph, const UOp* root);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_SCHEDULER_H_
