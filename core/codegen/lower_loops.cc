#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/codegen/access_bounds.h"
#include "core/codegen/lowerer.h"
#include "core/codegen/vector_range.h"
#include "core/ir/printer.h"
#include "core/ir/value_range.h"
#include "core/ir/verify.h"
#include "core/util/status_macros.h"

namespace uopd::lowering {

void Lowerer::ChooseIndexWidth() {
  constexpr Int128 kLimit = (Int128{1} << 31) - 2;
  for (const UOp* node : topo_) {
    // Every RANGE's counter is an INDEX, whatever the RANGE's own dtype (an int64 one may count
    // past 2^31).
    const bool counter = node->op() == Op::kRange;
    if (!counter &&
        (node->dtype().ptr || node->dtype().scalar != Scalar::kIndex || node->IsInvalid())) {
      continue;
    }
    Interval r = ranges_.Get(node);
    if (r.min < -kLimit || r.max > kLimit) {
      program_.index_bits = 64;
      return;
    }
  }
  program_.index_bits = 32;
}

void Lowerer::ChooseParallelLoop() {
  if (options_.min_parallel_work <= 0 || ast_.root->num_src() != 1) return;
  const UOp* end = ast_.root->src(0);
  if (end->op() != Op::kEnd) return;
  const std::vector<const UOp*> loops = SortedRanges(end->src().subspan(1));
  if (loops.empty()) return;
  const UOp* outer = loops.front();
  AxisType type = outer->arg().axis_type;
  if (type != AxisType::kLoop && type != AxisType::kGlobal && type != AxisType::kThread) return;
  // A THREAD range is the optimizer's choice of what threads split; otherwise the outermost
  // loop, when the kernel has enough work.
  Int128 work = 1;
  for (const UOp* node : topo_) {
    if (node->op() != Op::kRange) continue;
    work *= std::max<Int128>(1, ranges_.Get(node->src(0)).max);
    if (work >= options_.min_parallel_work) break;
  }
  if (type != AxisType::kThread && work < options_.min_parallel_work) return;
  Interval extent = ranges_.Get(outer->src(0));
  if (extent.max < 2) return;
  // core_id * chunk must not overflow the index width.
  if (program_.index_bits == 32 && extent.max > (Int128{1} << 29)) program_.index_bits = 64;
  program_.parallel = true;
  parallel_range_ = outer;
  const UOp* end_expr = outer->src(0);
  if (end_expr->IsConst()) {
    program_.parallel_extent.constant = static_cast<int64_t>(ConstIntValue(*end_expr));
  } else {
    program_.parallel_extent.expr = end_expr;
  }
}

void Lowerer::ChooseGridRanges() {
  if (ast_.root->num_src() != 1) return;
  const UOp* statement = ast_.root->src(0);
  // A kernel of one output (a STORE under the SINK, no END) has no grid ranges but may have a
  // group: tinygrad's GROUPTOP of a whole-tensor reduction.
  if (statement->op() != Op::kEnd && statement->op() != Op::kStore) return;
  Int128 threads = 1;
  // The kernel's outer parallel ranges, in order: GLOBAL (and LOOP), then a tensor core's WARP
  // and the LOCAL ranges, which the flattened index varies fastest, so neighbouring threads take
  // neighbouring LOCAL indices as the optimizer meant (run as loops inside each thread, a LOCAL
  // opt made kernels slower).
  const absl::Span<const UOp* const> ended =
      statement->op() == Op::kEnd ? statement->src().subspan(1) : absl::Span<const UOp* const>();
  for (const UOp* range : SortedRanges(ended)) {
    AxisType type = range->arg().axis_type;
    if (type != AxisType::kLoop && type != AxisType::kGlobal && type != AxisType::kWarp &&
        type != AxisType::kLocal) {
      break;
    }
    grid_ranges_.push_back(range);
  }
  // Within a block, tinygrad numbers its threads over the WARP and LOCAL ranges by axis, the
  // first (lowest) axis varying fastest (gpudims' lidx0 is threadIdx.x): its opts chose which
  // axis neighbouring threads share for that order, so the block's ranges come last here, the
  // lowest axis last of all (the flattened index varies its last range fastest).
  auto block = std::find_if(grid_ranges_.begin(), grid_ranges_.end(), [](const UOp* range) {
    const AxisType type = range->arg().axis_type;
    return type == AxisType::kWarp || type == AxisType::kLocal;
  });
  std::stable_sort(block, grid_ranges_.end(),
                   [](const UOp* a, const UOp* b) { return b->arg().axis < a->arg().axis; });
  if ((group_range_ = ChooseGroupRange()) != nullptr) PlaceGroupRange();
  for (const UOp* range : grid_ranges_) {
    program_.grid_ends.push_back(range->src(0));
    threads *= std::max<Int128>(1, ranges_.Get(range->src(0)).max);
    if (threads > (Int128{1} << 62)) threads = Int128{1} << 62;
  }
  // The flattened index and its strides must fit the index width, as must the threads of the
  // last block (a whole block runs when a group meets in shared memory).
  if (threads + options_.group_threads >= (Int128{1} << 31)) program_.index_bits = 64;
}

void Lowerer::PlaceGroupRange() {
  program_.group_threads = options_.group_threads;
  // Among the block's ranges by axis, as tinygrad numbers a GROUP_REDUCE range (GROUPTOP before
  // the LOCALs, as its heuristics apply them, makes the group's threads neighbours): its members
  // are then the product of the faster ranges apart, and must fit a block together.
  auto at = std::find_if(grid_ranges_.begin(), grid_ranges_.end(), [&](const UOp* range) {
    const AxisType type = range->arg().axis_type;
    return (type == AxisType::kWarp || type == AxisType::kLocal) &&
           range->arg().axis < group_range_->arg().axis;
  });
  Int128 stride = 1;
  for (auto it = at; it != grid_ranges_.end(); ++it) {
    if (!(*it)->src(0)->IsConst()) return PlaceGroupRangeLast();
    stride *= ConstIntValue(*(*it)->src(0));
  }
  if (options_.group_threads % (stride * ConstIntValue(*group_range_->src(0))) != 0) {
    return PlaceGroupRangeLast();
  }
  group_stride_ = static_cast<int64_t>(stride);
  grid_ranges_.insert(at, group_range_);
}

void Lowerer::PlaceGroupRangeLast() {
  group_stride_ = 1;
  grid_ranges_.push_back(group_range_);
}

const UOp* Lowerer::ChooseGroupRange() {
  if (options_.group_threads <= 0 || vector_range_ != nullptr) return nullptr;
  const UOp* group = nullptr;
  for (const UOp* node : topo_) {
    if (node->op() != Op::kRange || node->arg().axis_type != AxisType::kGroupReduce) continue;
    if (group != nullptr) return nullptr;  // one group range at most
    group = node;
  }
  if (group == nullptr || !group->src(0)->IsConst()) return nullptr;
  const Int128 size = ConstIntValue(*group->src(0));
  if (size < 2 || options_.group_threads % size != 0) return nullptr;
  // Only reductions close it, each a scalar of a type shared memory holds, computed once per
  // thread at the top level (the barrier must be reached by every thread of the block once),
  // with arrays of partials that fit a block's static shared memory.
  int64_t shared_bytes = 0;
  for (const UOp* node : topo_) {
    if (node->op() != Op::kReduce && node->op() != Op::kEnd) continue;
    auto closed = node->src().subspan(1);
    if (std::find(closed.begin(), closed.end(), group) == closed.end()) continue;
    if (node->op() != Op::kReduce) return nullptr;
    const Scalar s = node->dtype().scalar;
    if (node->dtype().count != 1 || s == Scalar::kBool || IsNarrowFloat(s)) return nullptr;
    const Op op = node->arg().reduce_op;
    if (op != Op::kAdd && op != Op::kMul && op != Op::kMax) return nullptr;
    shared_bytes += int64_t{options_.group_threads} * ScalarItemSize(s);
    if (shared_bytes > options_.shared_bytes) return nullptr;
    for (const UOp* free : FreeRanges(node)) {
      if (!IsGridRange(free)) return nullptr;
    }
  }
  return group;
}

absl::Status Lowerer::EmitGridIndex() {
  if (grid_ranges_.empty()) return absl::OkStatus();
  const DType index = DType::Of(Scalar::kIndex);
  std::vector<int> ends;
  for (const UOp* range : grid_ranges_) {
    UOPD_ASSIGN_OR_RETURN(int end, IndexValue(range->src(0)));
    // A range with a negative end has no iterations, as a loop would; left negative, two of
    // them would multiply to a positive total and give threads negative range values, which
    // the bounds proofs (a range is [0, end - 1]) never considered.
    if (ranges_.Get(range->src(0)).min < 0) end = Alu(Op::kMax, index, {end, IndexConst(0)});
    ends.push_back(end);
  }
  int total = ends[0];
  for (size_t i = 1; i < ends.size(); ++i) total = Alu(Op::kMul, index, {total, ends[i]});
  int rest;
  if (group_range_ == nullptr) {
    rest = Emit(Instr{.kind = InstrKind::kGlobalIndex, .dtype = index, .src = {total}});
  } else {
    // Every thread of a block reaches the barriers: one past the grid works as the last thread
    // does (in bounds) and stores nothing; of a group, its first thread stores.
    const DType boolean = DType::Of(Scalar::kBool);
    const int thread = Emit(Instr{.kind = InstrKind::kThreadIndex, .dtype = index, .src = {total}});
    const int in_grid = Alu(Op::kCmplt, boolean, {thread, total});
    rest = Alu(Op::kWhere, index, {in_grid, thread, Alu(Op::kSub, index, {total, IndexConst(1)})});
    block_position_ = Alu(Op::kMod, index, {thread, IndexConst(options_.group_threads)});
    // A group's members are group_stride_ apart in the block, from a multiple of the group's
    // span: this thread's offset from its group's first member, and where that member is.
    int offset = Alu(Op::kMod, index, {block_position_, IndexConst(GroupSize() * group_stride_)});
    if (group_stride_ > 1) {
      offset =
          Alu(Op::kSub, index, {offset, Alu(Op::kMod, index, {offset, IndexConst(group_stride_)})});
    }
    group_first_ = Alu(Op::kSub, index, {block_position_, offset});
    const int first = Alu(Op::kCmpeq, boolean, {offset, IndexConst(0)});
    group_store_mask_ = Alu(Op::kAnd, boolean, {in_grid, first});
  }
  for (size_t i = grid_ranges_.size(); i-- > 0;) {
    int value = i == 0 ? rest : Alu(Op::kMod, index, {rest, ends[i]}, grid_ranges_[i]);
    if (i > 0) rest = Alu(Op::kIdiv, index, {rest, ends[i]});
    open_ranges_[grid_ranges_[i]] = value;
  }
  return absl::OkStatus();
}

absl::Status Lowerer::OpenLoop(const UOp* range) {
  if (open_ranges_.contains(range)) return NodeError(*range, "RANGE is already open here");
  UOPD_ASSIGN_OR_RETURN(int end, IndexValue(range->src(0)));
  int start;
  if (range == parallel_range_) {
    // [core_id * chunk, min(start + chunk, end)) with chunk = ceil(end / core_count).
    const DType index = DType::Of(Scalar::kIndex);
    int core_id = Emit(Instr{.kind = InstrKind::kVar, .dtype = index, .var = core_id_var_});
    int cores = Emit(Instr{.kind = InstrKind::kVar, .dtype = index, .var = core_id_var_ + 1});
    int chunk =
        Alu(Op::kIdiv, index,
            {Alu(Op::kSub, index, {Alu(Op::kAdd, index, {end, cores}), IndexConst(1)}), cores});
    start = Alu(Op::kMul, index, {core_id, chunk});
    int stop = Alu(Op::kAdd, index, {start, chunk});
    int stop_lt_end = Alu(Op::kCmplt, DType::Of(Scalar::kBool), {stop, end});
    end = Alu(Op::kWhere, index, {stop_lt_end, stop, end});
  } else {
    start = IndexConst(0);
  }
  int loop = Emit(Instr{.kind = InstrKind::kLoopBegin,
                        .dtype = DType::Of(Scalar::kIndex),
                        .src = {start, end},
                        .origin = range});
  open_ranges_[range] = loop;
  scopes_.emplace_back();
  return absl::OkStatus();
}

void Lowerer::CloseLoop(const UOp* range) {
  Emit(Instr{.kind = InstrKind::kLoopEnd, .src = {open_ranges_.at(range)}, .origin = range});
  open_ranges_.erase(range);
  scopes_.pop_back();
}

absl::Status Lowerer::AfterDeps(const UOp* after) {
  for (size_t i = 1; i < after->num_src(); ++i) {
    const UOp* dep = after->src(i);
    if (dep->op() == Op::kConst) continue;  // a RANGE of one iteration, folded: orders nothing
    if (dep->op() == Op::kRange) {
      if (!open_ranges_.contains(dep)) {
        return NodeError(*after, absl::StrCat("depends on RANGE %", dep->id(),
                                              " outside the loop of that range"));
      }
      continue;
    }
    if (IsAlu(dep->op())) {
      // An index expression over ranges (a RANGE the optimizer split, k = k_hi * c + k_lo):
      // ordered after the current iteration of the ranges it uses, as a RANGE is.
      for (const UOp* range : FreeRanges(dep)) {
        if (!open_ranges_.contains(range)) {
          return NodeError(*after, absl::StrCat("depends on RANGE %", range->id(),
                                                " outside the loop of that range"));
        }
      }
      continue;
    }
    if (!done_statements_.contains(dep) && !open_ranges_.empty()) {
      // The dependency runs here, once per iteration of every open loop, as tinygrad places a
      // statement inside the loop of the innermost range it depends on (a register reset
      // inside a reduction nested in an output loop runs for every output). One that depends
      // only on outer loops belongs before the inner ones opened: not placed there yet.
      // Grid ranges are not loops: each thread runs one iteration of them.
      const UOp* innermost = nullptr;
      int innermost_loop = -1;
      for (const auto& [range, loop] : open_ranges_) {
        if (loop > innermost_loop && !IsGridRange(range)) {
          std::tie(innermost, innermost_loop) = std::tie(range, loop);
        }
      }
      if (innermost != nullptr && !FreeRanges(dep).contains(innermost)) {
        return absl::UnimplementedError(absl::StrCat(
            "lower: ", DescribeNode(*dep), " is ordered by ", DescribeNode(*after),
            " inside the loop of RANGE %", innermost->id(), ", which it does not depend on"));
      }
    }
    UOPD_RETURN_IF_ERROR(Statement(dep));
  }
  return absl::OkStatus();
}

absl::Status Lowerer::PlaceOuterDependencies(const std::vector<const UOp*>& afters,
                                             absl::Span<const UOp* const> inner) {
  if (inner.empty()) return absl::OkStatus();
  for (const UOp* after : afters) {
    for (size_t i = 1; i < after->num_src(); ++i) {
      const UOp* dep = after->src(i);
      // RANGEs, and what rewrites made of them (index expressions, constants), order no code.
      if (!IsStatement(*dep) || done_statements_.contains(dep)) continue;
      const auto& free = FreeRanges(dep);
      const bool placed_here =
          std::all_of(free.begin(), free.end(),
                      [&](const UOp* r) { return open_ranges_.contains(r); }) &&
          std::none_of(inner.begin(), inner.end(), [&](const UOp* r) { return free.contains(r); });
      if (placed_here) UOPD_RETURN_IF_ERROR(Statement(dep));
    }
  }
  return absl::OkStatus();
}

const absl::flat_hash_set<const UOp*>& Lowerer::FreeRanges(const UOp* node) {
  if (auto it = free_ranges_.find(node); it != free_ranges_.end()) return it->second;
  for (const UOp* n : Toposort(node)) {
    if (free_ranges_.contains(n)) continue;
    absl::flat_hash_set<const UOp*> free;
    size_t first_closed = n->num_src();
    if (n->op() == Op::kEnd || n->op() == Op::kReduce) first_closed = 1;
    for (size_t i = 0; i < n->num_src(); ++i) {
      const auto& src_free = free_ranges_.at(n->src(i));
      free.insert(src_free.begin(), src_free.end());
    }
    if (n->op() == Op::kRange) free.insert(n);
    for (size_t i = first_closed; i < n->num_src(); ++i) {
      // A closed range leaves, but what its end depends on stays.
      free.erase(n->src(i));
    }
    free_ranges_.emplace(n, std::move(free));
  }
  return free_ranges_.at(node);
}

}  // namespace uopd::lowering
