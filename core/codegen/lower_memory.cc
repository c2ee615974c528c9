#include <algorithm>
#include <limits>
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

absl::StatusOr<const UOp*> Lowerer::Buffer(const UOp* buffer) {
  std::vector<const UOp*> chain;
  while (buffer->op() == Op::kAfter) {
    chain.push_back(buffer);
    buffer = buffer->src(0);
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) UOPD_RETURN_IF_ERROR(AfterDeps(*it));
  if (buffer->op() != Op::kDefineGlobal && buffer->op() != Op::kDefineReg) {
    return NodeError(*buffer, "is not a buffer");
  }
  return buffer;
}

absl::StatusOr<Lowerer::Access> Lowerer::LowerRegisterAccess(const UOp* index_node,
                                                             const UOp* array, const UOp* idx) {
  if (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) {
    return absl::UnimplementedError(absl::StrCat("lower: ", DescribeNode(*index_node),
                                                 ": a masked access of a register array"));
  }
  const int64_t size = array->dtype().size;
  if (!ProveInBounds(idx, {}, size, ranges_)) {
    return NodeError(*index_node, absl::StrCat("a register array's index must be provably within "
                                               "its ",
                                               size, " elements"));
  }
  Access access{-1, 0};
  UOPD_ASSIGN_OR_RETURN(access.index, IndexValue(idx));
  if (IsVector(access.index)) {
    return absl::UnimplementedError(absl::StrCat(
        "lower: ", DescribeNode(*index_node), ": a register array indexed by a vectorized range"));
  }
  const auto defined = registers_.find(array);
  if (defined == registers_.end()) return NodeError(*index_node, "a register array not defined");
  access.array = defined->second;
  return access;
}

void Lowerer::RecordTouched(int slot, Interval elements) {
  auto [it, fresh] = accessed_.try_emplace(slot, elements);
  if (!fresh)
    it->second = {std::min(it->second.min, elements.min), std::max(it->second.max, elements.max)};
}

absl::StatusOr<Lowerer::Access> Lowerer::LowerAccess(const UOp* index_node) {
  UOPD_ASSIGN_OR_RETURN(const UOp* buffer, Buffer(index_node->src(0)));
  const UOp* idx = index_node->src(1);
  if (buffer->op() == Op::kDefineReg) return LowerRegisterAccess(index_node, buffer, idx);
  const int slot = static_cast<int>(buffer->arg().i);
  std::vector<const UOp*> conditions;
  while (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) {
    conditions.push_back(idx->src(0));
    idx = idx->src(1);
  }
  if (idx->IsInvalid()) {
    // Every guard folded to false (WHERE(false, i, Invalid) is Invalid): an access that never
    // happens, as tinygrad's loads of it give 0 and its stores drop. Masked off at element 0,
    // which a load that is not branched reads (so it counts as touched, as below).
    Access access{slot, 0};
    access.index = IndexConst(0);
    access.valid = EmitConst(DType::Of(Scalar::kBool), Arg::Bool(false));
    if (program_.Global(slot).size > 0) RecordTouched(slot, Interval{0, 0});
    ++program_.proven_accesses;
    return access;
  }
  // A load inside the index (a gather: src[idx[i]]) guards its own access: not searched.
  std::vector<const UOp*> stack = {idx};
  absl::flat_hash_set<const UOp*> seen = {idx};
  while (!stack.empty()) {
    const UOp* node = stack.back();
    stack.pop_back();
    if (node->IsInvalid()) {
      return NodeError(*index_node, "Invalid appears outside a WHERE(valid, idx, Invalid) guard");
    }
    if (node->op() == Op::kIndex) continue;
    for (const UOp* s : node->src()) {
      if (seen.insert(s).second) stack.push_back(s);
    }
  }
  Access access{slot, 0};
  UOPD_ASSIGN_OR_RETURN(access.index, IndexValue(idx));
  for (const UOp* cond : conditions) {
    UOPD_ASSIGN_OR_RETURN(int c, Value(cond));
    access.valid =
        access.valid < 0 ? c : Alu(Op::kAnd, DType::Of(Scalar::kBool), {access.valid, c});
  }
  access.contiguous = vector_range_ != nullptr && AffineCoefficient(idx, vector_range_) == 1;
  const BufferParam* param = &program_.Global(slot);
  const std::optional<Interval> bound = BoundAccess(idx, conditions, param->size, ranges_);
  // What this access may touch: the proven elements, or (checked at run time) any. A masked
  // load that is not branched reads element 0 where its mask is off.
  Interval touched = bound.value_or(Interval{0, param->size - 1});
  if (!conditions.empty())
    touched = touched.min > touched.max ? Interval{0, 0} : Interval{0, touched.max};
  // A buffer of no elements is never read (Legalize makes its loads constants): nothing touched.
  if (touched.min <= touched.max && param->size > 0) RecordTouched(slot, touched);
  if (bound) {
    ++program_.proven_accesses;
  } else {
    ++program_.guarded_accesses;
    // Checked lane by lane when the access is a vector one.
    const bool vector = IsVector(access.index) || (access.valid >= 0 && IsVector(access.valid));
    for (int lane = 0; lane < (vector ? width_ : 1); ++lane) {
      std::vector<int> src = {vector ? Lane(access.index, lane) : access.index};
      if (access.valid >= 0) src.push_back(vector ? Lane(access.valid, lane) : access.valid);
      Emit(Instr{.kind = InstrKind::kCheckBounds,
                 .src = std::move(src),
                 .slot = slot,
                 .size = param->size,
                 .origin = index_node});
    }
  }
  return access;
}

absl::Status Lowerer::Store(const UOp* store) {
  UOPD_ASSIGN_OR_RETURN(Access access, LowerAccess(store->src(0)));
  if (access.array >= 0) {
    UOPD_ASSIGN_OR_RETURN(int value, Value(store->src(1)));
    if (IsVector(value)) {
      return absl::UnimplementedError(
          absl::StrCat("lower: ", DescribeNode(*store), ": a vector stored into a register array"));
    }
    Emit(Instr{.kind = InstrKind::kArrayStore,
               .dtype = store->src(1)->dtype(),
               .src = {access.array, access.index, value},
               .origin = store});
    return absl::OkStatus();
  }
  if (group_store_mask_ >= 0) {  // of a group, its first thread stores; past the grid, none
    access.valid = access.valid < 0
                       ? group_store_mask_
                       : Alu(Op::kAnd, DType::Of(Scalar::kBool), {access.valid, group_store_mask_});
  }
  UOPD_ASSIGN_OR_RETURN(int value, Value(store->src(1)));
  const bool vector =
      IsVector(access.index) || IsVector(value) || (access.valid >= 0 && IsVector(access.valid));
  if (vector && access.contiguous && IsVector(access.index)) {
    // One vector store from lane 0's element.
    std::vector<int> src = {Lane(access.index, 0), Broadcast(value)};
    if (access.valid >= 0) src.push_back(access.valid);
    Emit(Instr{.kind = InstrKind::kStore,
               .dtype = program_.instrs[src[1]].dtype,
               .src = std::move(src),
               .slot = access.slot,
               .origin = store});
    return absl::OkStatus();
  }
  // Lane by lane, in lane order (a later lane's store to the same element wins).
  for (int lane = 0; lane < (vector ? width_ : 1); ++lane) {
    std::vector<int> src = {Lane(access.index, lane), Lane(value, lane)};
    if (access.valid >= 0) src.push_back(Lane(access.valid, lane));
    Emit(Instr{.kind = InstrKind::kStore,
               .dtype = store->src(1)->dtype(),
               .src = std::move(src),
               .slot = access.slot,
               .origin = store});
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Lowerer::Load(const UOp* node, const UOp* index_node, const UOp* alt) {
  UOPD_ASSIGN_OR_RETURN(Access access, LowerAccess(index_node));
  if (access.array >= 0) {
    return Emit(Instr{.kind = InstrKind::kArrayLoad,
                      .dtype = node->dtype(),
                      .src = {access.array, access.index},
                      .origin = node});
  }
  const bool vector = IsVector(access.index) || (access.valid >= 0 && IsVector(access.valid));
  int loaded;
  if (!vector) {
    std::vector<int> src = {access.index};
    if (access.valid >= 0) src.push_back(access.valid);
    loaded = Emit(Instr{.kind = InstrKind::kLoad,
                        .dtype = node->dtype(),
                        .src = std::move(src),
                        .slot = access.slot,
                        .origin = node});
  } else if (access.contiguous && IsVector(access.index)) {
    // One vector load from lane 0's element.
    std::vector<int> src = {Lane(access.index, 0)};
    if (access.valid >= 0) src.push_back(access.valid);
    loaded = Emit(Instr{.kind = InstrKind::kLoad,
                        .dtype = VectorOf(node->dtype()),
                        .src = std::move(src),
                        .slot = access.slot,
                        .origin = node});
  } else {
    // A gather: one load per lane.
    std::vector<int> lanes;
    for (int lane = 0; lane < width_; ++lane) {
      std::vector<int> src = {Lane(access.index, lane)};
      if (access.valid >= 0) src.push_back(Lane(access.valid, lane));
      lanes.push_back(Emit(Instr{.kind = InstrKind::kLoad,
                                 .dtype = node->dtype(),
                                 .src = std::move(src),
                                 .slot = access.slot,
                                 .origin = node}));
    }
    loaded = Emit(Instr{.kind = InstrKind::kBuild,
                        .dtype = VectorOf(node->dtype()),
                        .src = std::move(lanes),
                        .origin = node});
  }
  if (alt != nullptr && access.valid >= 0) {
    UOPD_ASSIGN_OR_RETURN(int alt_value, Value(alt));
    return VectorAlu(Op::kWhere, node->dtype(), {access.valid, loaded, alt_value}, node);
  }
  return loaded;
}

}  // namespace uopd::lowering
