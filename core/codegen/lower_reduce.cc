#include <algorithm>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/codegen/access_bounds.h"
#include "core/codegen/lowerer.h"
#include "core/codegen/vector_range.h"
#include "core/ir/printer.h"
#include "core/ir/value_range.h"
#include "core/util/status_macros.h"

namespace uopd::lowering {
namespace {

bool IsIdentityOf(Op op) { return op == Op::kAdd || op == Op::kMul || op == Op::kMax; }

}  // namespace

absl::Status Lowerer::HoistReductions(const UOp* body, const std::vector<const UOp*>& ranges) {
  std::vector<const UOp*> stack = {body};
  absl::flat_hash_set<const UOp*> seen = {body};
  std::vector<const UOp*> hoist;
  while (!stack.empty()) {
    const UOp* node = stack.back();
    stack.pop_back();
    if (node->op() == Op::kReduce && !Memo(node)) {
      const auto& free = FreeRanges(node);
      bool independent = std::none_of(ranges.begin(), ranges.end(),
                                      [&](const UOp* r) { return free.contains(r); });
      bool computable = std::all_of(free.begin(), free.end(),
                                    [&](const UOp* r) { return open_ranges_.contains(r); });
      if (independent && computable) {
        hoist.push_back(node);
        continue;  // its own body is handled when it is emitted
      }
    }
    for (const UOp* src : node->src()) {
      if (seen.insert(src).second) stack.push_back(src);
    }
  }
  // Memoized in the current scope for the loops about to open.
  return EmitReductions(std::move(hoist));
}

absl::StatusOr<Lowerer::PendingReduce> Lowerer::BeginReduce(const UOp* node) {
  Op op = node->arg().reduce_op;
  if (!IsIdentityOf(op)) return NodeError(*node, "unsupported reduction");
  PendingReduce r{node};
  const auto closed = node->src().subspan(1);
  r.over_lanes = vector_range_ != nullptr &&
                 std::find(closed.begin(), closed.end(), vector_range_) != closed.end();
  const bool vector_acc = r.over_lanes || IsVectorNode(node);
  int identity = EmitConst(node->dtype(), ReduceIdentityArg(op, node->dtype().scalar), node);
  if (vector_acc) identity = Broadcast(identity);
  r.acc_type = vector_acc ? VectorOf(node->dtype()) : node->dtype();
  r.acc = Emit(
      Instr{.kind = InstrKind::kAccDefine, .dtype = r.acc_type, .src = {identity}, .origin = node});
  for (const UOp* range : SortedRanges(closed)) {
    if (range == group_range_) {
      r.group = true;  // a thread of the grid, not a loop
    } else if (range != vector_range_) {
      r.loops.push_back(range);
    }
  }
  return r;
}

absl::Status Lowerer::UpdateReduce(const PendingReduce& r) {
  const UOp* value_node = r.node->src(0);
  std::vector<const UOp*> lanes = {value_node};
  if (value_node->op() == Op::kContract) {
    lanes.assign(value_node->src().begin(), value_node->src().end());
  }
  for (const UOp* lane : lanes) {
    UOPD_ASSIGN_OR_RETURN(int value, Value(lane));
    if (r.acc_type.count > 1) value = Broadcast(value);
    Emit(Instr{.kind = InstrKind::kAccUpdate,
               .op = r.node->arg().reduce_op,
               .dtype = r.acc_type,
               .src = {r.acc, value},
               .origin = r.node});
  }
  return absl::OkStatus();
}

int Lowerer::FinishReduce(const PendingReduce& r) {
  int result = Emit(
      Instr{.kind = InstrKind::kAccRead, .dtype = r.acc_type, .src = {r.acc}, .origin = r.node});
  if (r.over_lanes && r.loops.empty() && !r.group) {
    // The whole reduction is in the lanes (no loop): lane after lane, in order, as tinygrad's
    // expander folds an unrolled reduction, so the result is tinygrad's to the bit (the halving
    // tree below rounds in another order: 1 ulp off on a 4-element sum, test_swizzle_reduceop).
    const int lanes = r.acc_type.count;
    int acc = -1;
    for (int lane = 0; lane < lanes; ++lane) {
      const int value = Emit(Instr{.kind = InstrKind::kExtract,
                                   .dtype = r.node->dtype(),
                                   .src = {result},
                                   .lane = lane,
                                   .origin = r.node});
      acc = lane == 0 ? value
                      : Emit(Instr{.kind = InstrKind::kAlu,
                                   .op = r.node->arg().reduce_op,
                                   .dtype = r.node->dtype(),
                                   .src = {acc, value},
                                   .origin = r.node});
    }
    result = acc;
  } else if (r.over_lanes) {
    // A loop's vector of partial results: halving (the order of a reduction that runs in a
    // loop of vectors is the optimizer's anyway).
    result = Emit(Instr{.kind = InstrKind::kHReduce,
                        .op = r.node->arg().reduce_op,
                        .dtype = r.node->dtype(),
                        .src = {result},
                        .origin = r.node});
  }
  return r.group ? CombineGroup(r, result) : result;
}

int Lowerer::CombineGroup(const PendingReduce& r, int partial) {
  const DType index = DType::Of(Scalar::kIndex);
  const DType& d = r.node->dtype();
  const Op op = r.node->arg().reduce_op;
  const int shared = Emit(Instr{.kind = InstrKind::kSharedDefine,
                                .dtype = d,
                                .size = options_.group_threads,
                                .origin = r.node});
  Emit(Instr{.kind = InstrKind::kArrayStore,
             .dtype = d,
             .src = {shared, block_position_, partial},
             .origin = r.node});
  Emit(Instr{.kind = InstrKind::kBarrier, .origin = r.node});
  // Each thread adds its group's partial results in the group's order (the order of the serial
  // loop over it), from the first member's, group_stride_ apart.
  const int64_t size = GroupSize();
  int result = -1;
  for (int64_t k = 0; k < size; ++k) {
    const int at =
        k == 0 ? group_first_ : Alu(Op::kAdd, index, {group_first_, IndexConst(k * group_stride_)});
    const int value = Emit(
        Instr{.kind = InstrKind::kArrayLoad, .dtype = d, .src = {shared, at}, .origin = r.node});
    result = k == 0 ? value : Alu(op, d, {result, value}, r.node);
  }
  return result;
}

absl::StatusOr<int> Lowerer::Reduce(const UOp* node) {
  UOPD_ASSIGN_OR_RETURN(PendingReduce r, BeginReduce(node));
  UOPD_RETURN_IF_ERROR(HoistReductions(node->src(0), r.loops));
  for (const UOp* range : r.loops) UOPD_RETURN_IF_ERROR(OpenLoop(range));
  // Reductions inside this one's loops (a window position's sum over channels) that every
  // iteration needs: computed together, one loop nest for all, as an END's reductions are.
  UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere({node->src(0)})));
  UOPD_RETURN_IF_ERROR(UpdateReduce(r));
  for (auto it = r.loops.rbegin(); it != r.loops.rend(); ++it) CloseLoop(*it);
  return FinishReduce(r);
}

absl::Status Lowerer::EmitReductions(std::vector<const UOp*> reduces) {
  std::sort(reduces.begin(), reduces.end(),
            [](const UOp* a, const UOp* b) { return a->id() < b->id(); });
  std::vector<std::vector<const UOp*>> groups;
  for (const UOp* r : reduces) {
    if (Memo(r) != nullptr) continue;
    std::vector<const UOp*> loops;
    for (const UOp* range : SortedRanges(r->src().subspan(1))) {
      if (range != vector_range_ && range != group_range_) loops.push_back(range);
    }
    bool placed = false;
    for (auto& group : groups) {
      const UOp* first = group.front();
      std::vector<const UOp*> group_loops;
      for (const UOp* range : SortedRanges(first->src().subspan(1))) {
        if (range != vector_range_ && range != group_range_) group_loops.push_back(range);
      }
      if (group_loops != loops || loops.empty()) continue;
      // Not if it reads another member's result (softmax's sum of exp(x - max)).
      absl::flat_hash_set<const UOp*> inputs;
      for (const UOp* n : Toposort(r->src(0))) inputs.insert(n);
      if (std::any_of(group.begin(), group.end(),
                      [&](const UOp* m) { return inputs.contains(m); })) {
        continue;
      }
      group.push_back(r);
      placed = true;
      break;
    }
    if (!placed) groups.push_back({r});
  }
  for (const auto& group : groups) {
    if (group.size() == 1) {
      UOPD_ASSIGN_OR_RETURN(int value, Value(group.front()));
      (void)value;  // memoized in the current scope
      continue;
    }
    std::vector<PendingReduce> pending;
    for (const UOp* r : group) {
      UOPD_ASSIGN_OR_RETURN(PendingReduce p, BeginReduce(r));
      pending.push_back(std::move(p));
    }
    for (const PendingReduce& p : pending) {
      UOPD_RETURN_IF_ERROR(HoistReductions(p.node->src(0), p.loops));
    }
    for (const UOp* range : pending.front().loops) UOPD_RETURN_IF_ERROR(OpenLoop(range));
    std::vector<const UOp*> bodies;
    for (const PendingReduce& p : pending) bodies.push_back(p.node->src(0));
    UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere(bodies)));
    for (const PendingReduce& p : pending) UOPD_RETURN_IF_ERROR(UpdateReduce(p));
    for (auto it = pending.front().loops.rbegin(); it != pending.front().loops.rend(); ++it) {
      CloseLoop(*it);
    }
    for (const PendingReduce& p : pending) scopes_.back()[p.node] = FinishReduce(p);
  }
  return absl::OkStatus();
}

std::vector<const UOp*> Lowerer::ReductionsHere(absl::Span<const UOp* const> roots) {
  std::vector<const UOp*> found;
  std::vector<const UOp*> stack(roots.begin(), roots.end());
  absl::flat_hash_set<const UOp*> seen(roots.begin(), roots.end());
  while (!stack.empty()) {
    const UOp* node = stack.back();
    stack.pop_back();
    if (node->op() == Op::kReduce) {
      const auto& free = FreeRanges(node);
      if (!Memo(node) && std::all_of(free.begin(), free.end(), [&](const UOp* r) {
            return open_ranges_.contains(r) || r == vector_range_;
          })) {
        found.push_back(node);
      }
      continue;
    }
    for (const UOp* src : node->src()) {
      if (seen.insert(src).second) stack.push_back(src);
    }
  }
  return found;
}

}  // namespace uopd::lowering
