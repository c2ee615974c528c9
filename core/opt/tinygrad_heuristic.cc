#include "core/opt/tinygrad_heuristic.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/ir/graph.h"
#include "core/ir/symbolic.h"
#include "core/ir/value_range.h"

namespace uopd {
namespace {

using Types = std::initializer_list<AxisType>;

bool IsType(const UOp* range, Types types) {
  return std::find(types.begin(), types.end(), range->arg().axis_type) != types.end();
}

// A range's size when it is an int in tinygrad's full_shape (a constant), nullopt when symbolic.
std::optional<int64_t> IntSize(const UOp* range) {
  const UOp* size = range->src(0);
  if (!size->IsConst()) return std::nullopt;
  return static_cast<int64_t>(ConstIntValue(*size));
}

// The Scheduler's axes and tinygrad's views of them (postrange.py), read after each opt.
struct Shape {
  explicit Shape(const Scheduler& s) : rngs(s.Axes()) {}

  // axes_of: the axis numbers of these types.
  std::vector<int> AxesOf(Types types) const {
    std::vector<int> out;
    for (int i = 0; i < static_cast<int>(rngs.size()); ++i) {
      if (IsType(rngs[i], types)) out.push_back(i);
    }
    return out;
  }
  std::vector<const UOp*> RangesOf(Types types) const {
    std::vector<const UOp*> out;
    for (const UOp* r : rngs) {
      if (IsType(r, types)) out.push_back(r);
    }
    return out;
  }
  // Axes of these types with an int size > 1.
  std::vector<int> SizedAxesOf(Types types) const {
    std::vector<int> out;
    for (int i : AxesOf(types)) {
      if (IntSize(rngs[i]).value_or(0) > 1) out.push_back(i);
    }
    return out;
  }
  std::vector<int> Upcastable() const {
    return SizedAxesOf({AxisType::kGlobal, AxisType::kLocal, AxisType::kLoop});
  }
  // What UNROLL's axis numbers index.
  std::vector<int> Unrollable() const {
    return SizedAxesOf({AxisType::kGroupReduce, AxisType::kReduce});
  }
  // The int size of axis `i` (callers ask only for axes known to have one).
  int64_t Size(int i) const { return IntSize(rngs[i]).value_or(0); }
  // upcast_size(): the lanes UPCAST and UNROLL make (their sizes are always constants).
  int64_t UpcastSize() const {
    int64_t n = 1;
    for (int i : AxesOf({AxisType::kUpcast, AxisType::kUnroll})) n *= Size(i);
    return n;
  }
  // prod(output_shape[i] for i in upcastable_dims): the output's size outside upcasts.
  Int128 OutputSize() const {
    Int128 n = 1;
    for (int i : Upcastable()) n *= Size(i);
    return n;
  }

  std::vector<const UOp*> rngs;
};

// The nodes strictly below `root` (tinygrad's backward_slice: `root` itself is not in it).
absl::flat_hash_set<const UOp*> BackwardSlice(const UOp* root) {
  std::vector<const UOp*> nodes = TinygradToposort(root);
  nodes.pop_back();  // root comes last
  return absl::flat_hash_set<const UOp*>(nodes.begin(), nodes.end());
}

// An INDEX's index without its WHERE(valid, idx, Invalid) guard (tinygrad's get_idx()).
const UOp* GetIdx(const UOp* index) {
  const UOp* idx = index->src(1);
  if (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) return idx->src(1);
  return idx;
}

// One of tinygrad's k.bufs (every INDEX node of the kernel): its index expression and what lies
// strictly below it, which is what "the buffer uses the range" means in heuristic.py.
struct Buf {
  const UOp* idx;
  absl::flat_hash_set<const UOp*> below;
  bool Uses(const UOp* range) const { return below.contains(range); }
};

std::vector<Buf> BufsOf(const UOp* root) {
  std::vector<Buf> bufs;
  for (const UOp* n : TinygradToposort(root)) {
    if (n->op() == Op::kIndex) bufs.push_back({GetIdx(n), BackwardSlice(GetIdx(n))});
  }
  std::reverse(bufs.begin(), bufs.end());
  return bufs;
}

// The terms of a sum (split_uop(Ops.ADD)).
std::vector<const UOp*> AddTerms(const UOp* expr) {
  std::vector<const UOp*> terms;
  SymbolicRewriter::SplitUOp(expr, Op::kAdd, terms);
  return terms;
}

// Applies an opt; false (nothing applied) where tinygrad's apply_opt raises KernelOptError. Where
// tinygrad applies outside a try, a false here ends the heuristic (tinygrad's would raise): the
// steps below return false then.
bool TryApply(Scheduler& s, OptOp op, int axis, int arg) {
  return s.Apply(Opt{op, axis, arg}).ok();
}

// tinygrad's reduceop: the first REDUCE in toposort order.
const UOp* FirstReduce(const UOp* root) {
  for (const UOp* n : TinygradToposort(root)) {
    if (n->op() == Op::kReduce) return n;
  }
  return nullptr;
}

// Matvec (MV_BLOCKSIZE=4, MV_THREADS_PER_ROW=8, MV_ROWS_PER_THREAD=4): a sum of products of two
// loads whose first load walks the first reduce range directly and uses no range the second
// does not (v @ W) gets rows of 8 threads, 4 row blocks local and 4 rows per thread. True when
// it applied (the heuristic ends there).
bool TryMatvec(Scheduler& s) {
  const Shape shape(s);
  const UOp* reduce = FirstReduce(s.root());
  if (reduce == nullptr || reduce->arg().reduce_op != Op::kAdd || shape.rngs.size() < 2) {
    return false;
  }
  const UOp* mul = reduce->src(0);
  if (mul->op() != Op::kMul || mul->src(0)->op() != Op::kIndex || mul->src(1)->op() != Op::kIndex) {
    return false;
  }
  const std::vector<const UOp*> reduces = shape.RangesOf({AxisType::kReduce});
  if (reduces.empty()) return false;
  const UOp* first_reduce = reduces.front();
  const UOp* idx0 = GetIdx(mul->src(0));
  const UOp* idx1 = GetIdx(mul->src(1));
  const std::vector<const UOp*> terms0 = AddTerms(idx0);
  if (std::find(terms0.begin(), terms0.end(), first_reduce) == terms0.end()) return false;
  // UOp.ranges reads the nodes only; the rewriter's graph stays empty.
  Graph scratch;
  SymbolicRewriter rewriter(scratch);
  const absl::flat_hash_set<const UOp*>& ranges0 = rewriter.Ranges(idx0);
  const absl::flat_hash_set<const UOp*>& ranges1 = rewriter.Ranges(idx1);
  for (const UOp* r : ranges0) {
    if (!ranges1.contains(r)) return false;
  }
  // divides(8) of a symbolic size works on a copy of it.
  const bool rows_divide =
      rewriter.Divides(CopyInto(scratch, first_reduce->src(0)), /*v=*/8) != nullptr;
  for (int axis : shape.AxesOf({AxisType::kGlobal})) {
    if (!rows_divide || !IntSize(shape.rngs[axis]).has_value() || shape.Size(axis) % 16 != 0) {
      continue;
    }
    TryApply(s, OptOp::kGroup, 0, 8);  // errors ignored, as in tinygrad
    if (TryApply(s, OptOp::kLocal, axis, 4)) TryApply(s, OptOp::kUpcast, axis, 4);
    return true;
  }
  return false;
}

// Small axes (≤ 7, product ≤ 49) that a WHERE's condition depends on (pads, cat, stack) are
// upcast whole, the last first so the earlier axis numbers stay valid.
bool UpcastMaskedAxes(Scheduler& s) {
  const Shape shape(s);
  absl::flat_hash_set<const UOp*> in_conditions;
  for (const UOp* n : TinygradToposort(s.root())) {
    if (n->op() != Op::kWhere) continue;
    absl::flat_hash_set<const UOp*> below = BackwardSlice(n->src(0));
    in_conditions.insert(below.begin(), below.end());
  }
  std::vector<int> to_upcast;
  int64_t product = 1;
  for (int axis : shape.Upcastable()) {
    const int64_t size = shape.Size(axis);
    if (size <= 7 && in_conditions.contains(shape.rngs[axis]) && product * size <= 7 * 7) {
      to_upcast.push_back(axis);
      product *= size;
    }
  }
  for (auto it = to_upcast.rbegin(); it != to_upcast.rend(); ++it) {
    if (!TryApply(s, OptOp::kUpcast, *it, 0)) return false;
  }
  return true;
}

// While the output is large (≥ 1024) and the upcasts small (< 32): upcast by 3 or 4 the axis a
// broadcast buffer ignores (its loads are reused across the lanes), ranked by
// (buffers using it, sum of its constant strides, axis, amount), smallest first.
bool UpcastOutputAxes(Scheduler& s) {
  // Axis numbers, as tinygrad keeps them: an axis upcast whole drops out and the number then
  // names the next one.
  absl::flat_hash_set<int> upcasted_axis;
  for (;;) {
    const Shape shape(s);
    if (shape.OutputSize() < 1024 || shape.UpcastSize() >= 32) return true;
    const std::vector<Buf> bufs = BufsOf(s.root());
    const std::vector<const UOp*> lanes = shape.RangesOf({AxisType::kUpcast, AxisType::kUnroll});
    std::optional<std::tuple<int64_t, int64_t, int, int>> best;
    for (int axis : shape.Upcastable()) {
      for (int amount : {3, 4}) {
        if (upcasted_axis.contains(axis) || shape.Size(axis) % amount != 0) continue;
        const UOp* rng = shape.rngs[axis];
        const bool reused = std::any_of(bufs.begin(), bufs.end(), [&](const Buf& b) {
          return !b.Uses(rng) &&
                 std::all_of(lanes.begin(), lanes.end(), [&](const UOp* r) { return b.Uses(r); });
        });
        if (!reused) continue;
        int64_t num_strides = 0, sum_strides = 0;
        for (const Buf& b : bufs) {
          num_strides += b.Uses(rng);
          for (const UOp* c : AddTerms(b.idx)) {
            if (c == rng) sum_strides += 1;
            if (c->op() != Op::kMul) continue;
            if (c->src(0) == rng && c->src(1)->IsConst()) {
              sum_strides += static_cast<int64_t>(ConstIntValue(*c->src(1)));
            }
            if (c->src(1) == rng && c->src(0)->IsConst()) {
              sum_strides += static_cast<int64_t>(ConstIntValue(*c->src(0)));
            }
          }
        }
        const auto choice = std::make_tuple(num_strides, sum_strides, axis, amount);
        if (!best.has_value() || choice < *best) best = choice;
      }
    }
    if (!best.has_value()) return true;
    if (!TryApply(s, OptOp::kUpcast, std::get<2>(*best), std::get<3>(*best))) return false;
    upcasted_axis.insert(std::get<2>(*best));
  }
}

// The last reduce axis unrolled: whole when ≤ 32 (and the one before it too when both are
// ≤ 3), else by 4 when 4 divides it. Errors end the step, as tinygrad's try does.
void UnrollReduce(Scheduler& s) {
  const Shape shape(s);
  const std::vector<int> unrollable = shape.Unrollable();
  if (unrollable.empty() ||
      !(shape.UpcastSize() <= 4 || shape.AxesOf({AxisType::kUnroll}).empty()) ||
      shape.UpcastSize() >= 64) {
    return;
  }
  const int last = static_cast<int>(unrollable.size()) - 1;
  const int64_t size = shape.Size(unrollable.back());
  if (size <= 32) {
    if (!TryApply(s, OptOp::kUnroll, last, 0)) return;
    const Shape after(s);
    const std::vector<int> rest = after.Unrollable();
    if (!rest.empty() && size <= 3 && after.Size(rest.back()) <= 3) {
      TryApply(s, OptOp::kUnroll, static_cast<int>(rest.size()) - 1, 0);
    }
  } else if (size % 4 == 0) {
    TryApply(s, OptOp::kUnroll, last, 4);
  }
}

// Locals: GLOBAL/LOOP axes of constant size, those some buffer ignores first, then from the
// last axis back, each take the first of (32 for axis 0), 16, 8, 4, 3, 2 that divides it within
// 128 threads in all; the first three chosen are applied in axis order.
bool ApplyLocals(Scheduler& s) {
  const Shape shape(s);
  const std::vector<Buf> bufs = BufsOf(s.root());
  std::vector<std::pair<bool, int>> ranking;
  for (int axis : shape.AxesOf({AxisType::kGlobal, AxisType::kLoop})) {
    if (!shape.rngs[axis]->src(0)->IsConst()) continue;
    const UOp* rng = shape.rngs[axis];
    ranking.push_back(
        {std::any_of(bufs.begin(), bufs.end(), [&](const Buf& b) { return !b.Uses(rng); }), axis});
  }
  std::sort(ranking.begin(), ranking.end(), [](const auto& a, const auto& b) {
    return std::make_pair(-static_cast<int>(a.first), -a.second) <
           std::make_pair(-static_cast<int>(b.first), -b.second);
  });
  std::vector<std::pair<int, int>> to_local;
  int64_t local_size = 1;
  for (const auto& [expands, axis] : ranking) {
    std::vector<int> choices = {16, 8, 4, 3, 2};
    if (axis == 0) choices.insert(choices.begin(), 32);
    for (int x : choices) {
      if (shape.Size(axis) % x == 0 && local_size * x <= 128) {
        to_local.push_back({axis, x});
        local_size *= x;
        break;
      }
    }
  }
  if (to_local.size() > 3) to_local.resize(3);
  std::sort(to_local.begin(), to_local.end());
  int deleted_shape = 0;
  for (auto [axis, local_sz] : to_local) {
    axis -= deleted_shape;
    // An axis made local whole drops out of the axis list: later numbers shift down.
    const bool will_delete_shape = local_sz == Shape(s).Size(axis);
    if (!TryApply(s, OptOp::kLocal, axis, local_sz)) return false;
    deleted_shape += will_delete_shape;
  }
  return true;
}

// resolve(prod(full_shape) // (128 << 10) < threads): whether the kernel has fewer 128K-iteration
// chunks than `threads`. With symbolic sizes the comparison is simplified and decided by its
// bounds, as tinygrad's resolve does; undecided is true (resolve's default).
bool FewerChunksThanThreads(const std::vector<const UOp*>& rngs, int threads) {
  constexpr int64_t kChunk = 128 << 10;
  Graph scratch;
  std::vector<const UOp*> sizes;
  for (const UOp* r : rngs) sizes.push_back(CopyInto(scratch, r->src(0)));
  SymbolicRewriter rewriter(scratch);
  // Python's prod: ints multiply as ints until the first symbolic size.
  Int128 int_product = 1;
  const UOp* product = nullptr;
  for (const UOp* size : sizes) {
    size = rewriter.Simplify(size);  // full_shape holds ssimplify(size)
    if (size->IsConst()) {
      if (product == nullptr) {
        int_product *= ConstIntValue(*size);
      } else {
        product = rewriter.Mul(product, rewriter.ConstLike(product, ConstIntValue(*size)));
      }
    } else {
      product =
          rewriter.Mul(product == nullptr ? rewriter.ConstLike(size, int_product) : product, size);
    }
  }
  if (product == nullptr) return int_product / kChunk < threads;
  const UOp* chunks = rewriter.Alu(Op::kIdiv, product, rewriter.ConstLike(product, kChunk));
  const UOp* fewer =
      rewriter.Simplify(rewriter.Alu(Op::kCmplt, chunks, rewriter.ConstLike(chunks, threads)));
  const SymBounds bounds = rewriter.Bounds(fewer);
  return bounds.lo == bounds.hi ? bounds.lo != 0 : true;
}

// Whether THREAD may take `range` in tinygrad (_globalizable_rngs): a LOOP range of an END
// directly under the SINK. uopd's Scheduler also threads the ranges of a GROUP of ENDs (a store
// the CPU pre-opt passes cut in pieces); tinygrad's THREAD refuses them, so its heuristic never
// threads such a kernel.
bool TinygradGlobalizable(const UOp* root, const UOp* range) {
  if (range->arg().axis_type != AxisType::kLoop) return false;
  Graph scratch;  // UOp.ranges reads the nodes only
  SymbolicRewriter rewriter(scratch);
  for (const UOp* end : root->src()) {
    if (end->op() != Op::kEnd) continue;
    for (size_t i = 1; i < end->num_src(); ++i) {
      if (rewriter.Ranges(end->src(i)).contains(range)) return true;
    }
  }
  return false;
}

// Threads: the largest of 32, 16, 12, 8, 6, 5, 4, 3, 2 within the target's threads and the
// kernel's 128K-iteration chunks, on the first LOOP axis it divides.
void ApplyThreads(Scheduler& s) {
  const OptTarget& target = s.target();
  if (!target.has_threads || target.max_threads <= 0) return;
  for (int threads : {32, 16, 12, 8, 6, 5, 4, 3, 2}) {
    const Shape shape(s);
    if (threads > target.max_threads || FewerChunksThanThreads(shape.rngs, threads)) continue;
    for (int axis : shape.AxesOf({AxisType::kLoop})) {
      // A symbolic size never divides (tinygrad compares a UOp with 0 by identity).
      if (IntSize(shape.rngs[axis]).has_value() && shape.Size(axis) % threads == 0) {
        // Errors ignored, as in tinygrad.
        if (TinygradGlobalizable(s.root(), shape.rngs[axis])) {
          TryApply(s, OptOp::kThread, axis, threads);
        }
        break;
      }
    }
    if (!s.applied().empty() && s.applied().back().op == OptOp::kThread) return;
  }
}

}  // namespace

bool TryTensorCores(Scheduler& s) {
  // tinygrad's TC_OPT 0: only kernels with one reduce axis.
  int reduces = 0;
  for (const UOp* axis : s.Axes()) {
    const AxisType type = axis->arg().axis_type;
    reduces += type == AxisType::kReduce || type == AxisType::kGroupReduce;
  }
  if (reduces != 1 || s.target().tensor_cores.empty()) return false;
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {-1, 0, 1};
  if (!s.Apply(tc).ok()) return false;
  // Upcast what is left of M, then of N, by the first of 5, 4, 3, 2 that divides it, then make
  // 4 or 2 of N's rest threads of the block.
  std::array<const UOp*, 3> axes = s.tensor_core_axes();
  auto index_of = [&](const UOp* range) {
    const std::vector<const UOp*> order = s.Axes();
    return static_cast<int>(std::find(order.begin(), order.end(), range) - order.begin());
  };
  auto size_of = [](const UOp* range) {
    return range->src(0)->IsConst() ? ConstIntValue(*range->src(0)) : Int128{-1};
  };
  // The range a split left in place of `range` (the same argument, a smaller size).
  auto kept = [&](const UOp* range) {
    for (const UOp* r : s.Axes()) {
      if (r->arg() == range->arg()) return r;
    }
    return range;
  };
  for (int dim : {1, 0}) {
    for (int amount : {5, 4, 3, 2}) {
      const Int128 size = size_of(axes[dim]);
      if (size <= 0 || size % amount != 0) continue;
      if (TryApply(s, OptOp::kUpcast, index_of(axes[dim]), amount)) axes[dim] = kept(axes[dim]);
      break;
    }
  }
  for (int amount : {4, 2}) {
    const Int128 size = size_of(axes[0]);
    if (size <= 0 || size % amount != 0) continue;
    TryApply(s, OptOp::kLocal, index_of(axes[0]), amount);
    break;
  }
  return true;
}

void ApplyTinygradHeuristics(Scheduler& scheduler) {
  Scheduler& s = scheduler;
  const OptTarget& target = s.target();
  // Tensor cores come first. Images: none.
  if (TryTensorCores(s)) return;
  if (target.has_local && target.has_shared && TryMatvec(s)) return;

  // Grouping: a small output spreads its reduction over 16 threads of a workgroup.
  if (Shape(s).OutputSize() <= 2048) {
    for (int axis : {0, 1, 2}) {
      if (TryApply(s, OptOp::kGroupTop, axis, 16)) break;
    }
  }
  if (!Shape(s).AxesOf({AxisType::kGroupReduce}).empty()) return;

  if (!UpcastMaskedAxes(s)) return;
  if (!UpcastOutputAxes(s)) return;
  UnrollReduce(s);

  // If nothing is upcast yet and the last output axis takes 4, upcast it by 4.
  {
    const Shape shape(s);
    const std::vector<int> upcastable = shape.Upcastable();
    if (shape.AxesOf({AxisType::kUpcast, AxisType::kUnroll}).empty() && !upcastable.empty() &&
        shape.Size(upcastable.back()) % 4 == 0) {
      if (!TryApply(s, OptOp::kUpcast, upcastable.back(), 4)) return;
    }
  }

  if (target.has_local && !ApplyLocals(s)) return;
  ApplyThreads(s);
}

}  // namespace uopd
