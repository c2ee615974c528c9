#include "core/codegen/warp_reduction.h"

#include <cstdlib>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "core/ir/evaluate.h"

namespace uopd {
namespace {

bool IsReductionLoop(const Instr& in) {
  return in.kind == InstrKind::kLoopBegin && in.origin != nullptr &&
         in.origin->op() == Op::kRange && in.origin->arg().axis_type == AxisType::kReduce;
}

// The RANGE and DEFINE_VAR leaves of an integer expression.
void Leaves(const UOp* root, absl::flat_hash_set<const UOp*>& out) {
  std::vector<const UOp*> stack = {root};
  absl::flat_hash_set<const UOp*> seen;
  while (!stack.empty()) {
    const UOp* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    if (node->op() == Op::kRange || node->op() == Op::kDefineVar) out.insert(node);
    if (node->op() == Op::kRange) continue;  // its end is not part of the value
    for (const UOp* src : node->src()) stack.push_back(src);
  }
}

// How far `index` moves when `leaf` goes from 1 to 2, every other leaf at 1; nullopt when it
// cannot be evaluated (a loaded value in the index, say).
std::optional<Int128> Step(const UOp* index, const absl::flat_hash_set<const UOp*>& leaves,
                           const UOp* leaf) {
  absl::flat_hash_map<const UOp*, Int128> values;
  for (const UOp* l : leaves) values[l] = 1;
  auto at1 = EvaluateInt(index, values);
  values[leaf] = 2;
  auto at2 = EvaluateInt(index, values);
  if (!at1.ok() || !at2.ok()) return std::nullopt;
  return *at2 - *at1;
}

// Neighbouring iterations (or threads) read neighbouring memory: within one access of `width`
// elements (a vector load of 4 lanes steps by 4).
bool Near(Int128 step, int width = 1) { return step >= -width && step <= width; }

}  // namespace

WarpReductionPlan PlanWarpReductions(const LinearProgram& p, int lanes) {
  WarpReductionPlan plan;
  if (p.grid_ends.empty() || p.guarded_accesses > 0) return plan;
  const std::vector<Instr>& ins = p.instrs;
  const int n = static_cast<int>(ins.size());

  // The outermost reduction loop around each instruction (-1: none), and the ranges that are
  // loops (the others in index expressions are mapped onto the grid).
  std::vector<int> around(n, -1);
  absl::flat_hash_set<const UOp*> loop_ranges;
  int outermost = -1;
  for (int i = 0; i < n; ++i) {
    const Instr& in = ins[i];
    if (in.kind == InstrKind::kLoopEnd && in.src[0] == outermost) outermost = -1;
    around[i] = outermost;
    if (in.kind == InstrKind::kLoopBegin) {
      if (in.origin != nullptr) loop_ranges.insert(in.origin);
      if (outermost < 0 && IsReductionLoop(in)) outermost = i;
    }
  }

  absl::flat_hash_set<int> unsafe;
  absl::flat_hash_map<int, int> updated_in;  // accumulator -> the loop updating it (-1: none)
  for (int i = 0; i < n; ++i) {
    const Instr& in = ins[i];
    const int loop = around[i];
    // A store inside the loop, to memory or to a thread's register array (each lane would keep
    // its own share of what the iterations carry in it), leaves the loop to one thread.
    if ((in.kind == InstrKind::kStore || in.kind == InstrKind::kArrayStore) && loop >= 0) {
      unsafe.insert(loop);
    }
    if (in.kind == InstrKind::kAccRead && loop >= 0 && in.src[0] < loop) unsafe.insert(loop);
    if (in.kind != InstrKind::kAccUpdate) continue;
    const int acc = in.src[0];
    if (loop >= 0 && acc > loop) continue;  // a reduction within one iteration
    auto [it, inserted] = updated_in.try_emplace(acc, loop);
    if (!inserted && it->second != loop) {  // updated in two places: combining is not enough
      if (it->second >= 0) unsafe.insert(it->second);
      if (loop >= 0) unsafe.insert(loop);
    }
    if (loop < 0 || !inserted) continue;  // each accumulator is combined once
    plan.loops[loop].push_back({acc, in.op});
  }
  for (int i = 0; i < n; ++i) {
    const Instr& in = ins[i];
    if (!IsReductionLoop(in) || around[i] >= 0 || unsafe.contains(i)) continue;
    const Instr& start = ins[in.src[0]];
    const Instr& end = ins[in.src[1]];
    if (start.kind == InstrKind::kConst && end.kind == InstrKind::kConst &&
        end.arg.i - start.arg.i < lanes) {
      unsafe.insert(i);  // too short to share
    }
  }
  for (auto it = plan.loops.begin(); it != plan.loops.end();) {
    if (unsafe.contains(it->first)) {
      plan.loops.erase(it++);
    } else {
      ++it;
    }
  }
  if (plan.loops.empty()) return plan;

  // Whether the loads favour lanes: contiguous along the reduction but not along the grid.
  int favour = 0;
  for (int i = 0; i < n; ++i) {
    const Instr& in = ins[i];
    if (in.kind != InstrKind::kLoad || around[i] < 0 || !plan.loops.contains(around[i])) continue;
    const UOp* index = ins[in.src[0]].origin;
    const UOp* reduction = ins[around[i]].origin;
    if (index == nullptr) continue;
    absl::flat_hash_set<const UOp*> leaves;
    Leaves(index, leaves);
    const UOp* inner = nullptr;  // the grid range neighbouring threads differ in
    for (const UOp* leaf : leaves) {
      if (leaf->op() != Op::kRange || loop_ranges.contains(leaf)) continue;
      // A vector range's lanes are one thread's: not what neighbouring threads differ in.
      const AxisType type = leaf->arg().axis_type;
      if (type == AxisType::kUpcast || type == AxisType::kUnroll) continue;
      if (inner == nullptr || leaf->arg().axis > inner->arg().axis) inner = leaf;
    }
    auto along_reduction = leaves.contains(reduction) ? Step(index, leaves, reduction) : Int128{0};
    auto along_grid = inner != nullptr ? Step(index, leaves, inner) : Int128{0};
    if (!along_reduction || !along_grid) continue;
    const int width = in.dtype.count;
    if (*along_reduction != 0 && Near(*along_reduction, width) && !Near(*along_grid, width))
      ++favour;
    if (Near(*along_grid, width) && !Near(*along_reduction, width)) --favour;
  }
  if (favour <= 0) {
    plan.loops.clear();
    return plan;
  }
  plan.enabled = true;
  return plan;
}

}  // namespace uopd
