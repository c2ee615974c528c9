#include "core/opt/scheduler.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/codegen/codegen_target.h"
#include "core/ir/hash.h"
#include "core/ir/symbolic.h"
#include "core/ir/value_range.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

absl::Status OptError(absl::string_view why) { return absl::InvalidArgumentError(why); }

bool IsType(const UOp* range, std::initializer_list<AxisType> types) {
  return std::find(types.begin(), types.end(), range->arg().axis_type) != types.end();
}

// The constant size of a range, or -1 when it is symbolic.
int64_t ConstSize(const UOp* range) {
  const UOp* size = range->src(0);
  return size->IsConst() ? static_cast<int64_t>(ConstIntValue(*size)) : -1;
}

// The largest value a range takes (tinygrad's vmax), from its size's bounds.
int64_t RangeMax(const UOp* range) {
  ValueRanges ranges;
  Interval size = ranges.Get(range->src(0));
  return static_cast<int64_t>(std::max<Int128>(0, size.max - 1));
}

}  // namespace

std::vector<const UOp*> RangesInOrder(const UOp* expr) {
  std::vector<const UOp*> out;
  absl::flat_hash_set<const UOp*> seen;
  std::vector<std::pair<const UOp*, size_t>> stack = {{expr, 0}};
  seen.insert(expr);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->num_src()) {
      const UOp* s = node->src(next++);
      if (seen.insert(s).second) stack.push_back({s, 0});
      continue;
    }
    if (node->op() == Op::kRange) out.push_back(node);
    stack.pop_back();
  }
  return out;
}

OptTarget OptTarget::Cpu(int cores) {
  OptTarget t;
  t.device = "CPU";
  t.has_threads = true;
  t.max_threads = std::max(cores, 8);
  t.cores = std::max(cores, 1);
  return t;
}

namespace {
std::atomic<bool> tensor_cores_enabled{true};
}  // namespace

void SetTensorCoresEnabled(bool enabled) { tensor_cores_enabled = enabled; }
bool TensorCoresEnabled() { return tensor_cores_enabled; }

OptTarget OptTarget::Cuda(const std::string& arch) {
  OptTarget t;
  t.device = absl::StrCat("CUDA:", arch);
  t.has_local = true;
  t.has_shared = true;
  if (TensorCoresEnabled()) t.tensor_cores = CudaTensorCores(arch);
  t.shared_max = kCudaSharedBytes;
  t.block_threads = kCudaBlockThreads;
  t.warp_lanes = kWarpLanes;
  return t;
}

OptTarget OptTargetFor(const std::string& base_device, const std::string& compile_target,
                       int threads) {
  if (base_device == "CUDA") return OptTarget::Cuda(compile_target);
  OptTarget cpu = OptTarget::Cpu(threads);
  if (absl::StrContains(compile_target, "+avx512f")) {
    cpu.vector_bytes = 64;
    cpu.vector_registers = 32;
  } else if (!absl::StrContains(compile_target, "+avx")) {
    cpu.vector_bytes = 16;  // SSE or NEON
  }
  return cpu;
}

const UOp* CopyInto(Graph& graph, const UOp* root) {
  absl::flat_hash_map<const UOp*, const UOp*> copied;
  for (const UOp* node : Toposort(root)) {
    std::vector<const UOp*> src;
    src.reserve(node->num_src());
    for (const UOp* s : node->src()) src.push_back(copied.at(s));
    copied[node] = graph.Make(node->op(), node->dtype(), std::move(src), node->arg());
  }
  return copied.at(root);
}

Scheduler::Scheduler(const KernelAst& ast, OptTarget target)
    : graph_(std::make_unique<Graph>()), target_(std::move(target)) {
  root_ = CopyInto(*graph_, ast.root);
  for (const UOp* range : Axes()) {
    if (!range->arg().axis.empty()) {
      next_range_id_ = std::max(next_range_id_, range->arg().axis.front() + 1);
    }
  }
  if (target_.has_local) {
    std::vector<std::pair<const UOp*, const UOp*>> map;
    for (const UOp* range : GlobalizableRanges()) {
      map.push_back({range, graph_->Make(Op::kRange, range->dtype(), {range->src(0)},
                                         Arg::Range(range->arg().axis, AxisType::kGlobal))});
    }
    if (!map.empty()) root_ = Substitute(root_, map);
  }
}

std::vector<const UOp*> Scheduler::Axes() const {
  std::vector<const UOp*> axes;
  for (const UOp* node : Toposort(root_)) {
    if (node->op() == Op::kRange && RangeMax(node) > 0) axes.push_back(node);
  }
  std::stable_sort(axes.begin(), axes.end(), [](const UOp* a, const UOp* b) {
    int pa = AxisPosition(a->arg().axis_type), pb = AxisPosition(b->arg().axis_type);
    if (pa != pb) return pa < pb;
    return a->arg().axis < b->arg().axis;
  });
  return axes;
}

std::vector<const UOp*> Scheduler::GlobalizableRanges() const {
  // Ranges closed by an END directly under the SINK (or a GROUP of such ENDs).
  std::vector<const UOp*> ends;
  std::vector<const UOp*> stack(root_->src().begin(), root_->src().end());
  while (!stack.empty()) {
    const UOp* node = stack.back();
    stack.pop_back();
    if (node->op() == Op::kEnd) ends.push_back(node);
    if (node->op() == Op::kGroup) stack.insert(stack.end(), node->src().begin(), node->src().end());
  }
  std::vector<const UOp*> out;
  for (const UOp* end : ends) {
    for (size_t i = 1; i < end->num_src(); ++i) {
      for (const UOp* n : Toposort(end->src(i))) {
        if (n->op() == Op::kRange && n->arg().axis_type == AxisType::kLoop &&
            std::find(out.begin(), out.end(), n) == out.end()) {
          out.push_back(n);
        }
      }
    }
  }
  return out;
}

const UOp* Scheduler::Substitute(const UOp* root,
                                 const std::vector<std::pair<const UOp*, const UOp*>>& map) {
  absl::flat_hash_map<const UOp*, const UOp*> replaced(map.begin(), map.end());
  for (const UOp* node : Toposort(root)) {
    if (replaced.contains(node)) continue;
    bool changed = false;
    std::vector<const UOp*> src;
    src.reserve(node->num_src());
    for (const UOp* s : node->src()) {
      auto it = replaced.find(s);
      src.push_back(it == replaced.end() ? s : it->second);
      changed |= it != replaced.end();
    }
    if (changed)
      replaced[node] = graph_->Make(node->op(), node->dtype(), std::move(src), node->arg());
  }
  auto it = replaced.find(root);
  return it == replaced.end() ? root : it->second;
}

absl::StatusOr<const UOp*> Scheduler::RealAxis(const Opt& opt) const {
  if (!opt.axis.has_value()) return OptError(absl::StrCat(opt.ToString(), " needs an axis"));
  std::vector<const UOp*> axes = Axes();
  std::vector<const UOp*> candidates;
  if (opt.op == OptOp::kUnroll) {
    for (const UOp* a : axes) {
      if (IsType(a, {AxisType::kGroupReduce, AxisType::kReduce}) && ConstSize(a) > 1) {
        candidates.push_back(a);
      }
    }
  } else if (opt.op == OptOp::kGroup || opt.op == OptOp::kGroupTop) {
    for (const UOp* a : axes) {
      if (a->arg().axis_type == AxisType::kReduce) candidates.push_back(a);
    }
  } else {
    candidates = axes;
  }
  if (*opt.axis < 0 || *opt.axis >= static_cast<int>(candidates.size())) {
    return OptError(absl::StrCat("invalid axis ", *opt.axis, " for ", opt.ToString(),
                                 ": the kernel has ", candidates.size(), " such axes"));
  }
  return candidates[*opt.axis];
}

absl::Status Scheduler::ShiftTo(const UOp* range, int64_t amount, AxisType type, bool top,
                                const UOp** kept_out, const UOp* given) {
  const int64_t size = ConstSize(range);
  if (amount <= 0 || size < 0 || size % amount != 0) {
    return OptError(absl::StrCat(amount, " can't divide ",
                                 size < 0 ? std::string("a symbolic size") : absl::StrCat(size)));
  }
  const int64_t rest = size / amount;
  const DType index = DType::Of(Scalar::kIndex);
  const UOp* fresh = given != nullptr ? given
                                      : graph_->Make(Op::kRange, index, {IndexConst(amount)},
                                                     Arg::Range({next_range_id_++}, type));
  const UOp* kept = graph_->Make(Op::kRange, index, {IndexConst(rest)}, range->arg());
  const UOp* expr =
      top ? graph_->Make(Op::kAdd, index,
                         {graph_->Make(Op::kMul, index, {fresh, IndexConst(rest)}), kept})
          : graph_->Make(Op::kAdd, index,
                         {graph_->Make(Op::kMul, index, {kept, IndexConst(amount)}), fresh});
  root_ = Substitute(root_, {{range, expr}});
  if (kept_out != nullptr) *kept_out = kept;
  return absl::OkStatus();
}

namespace {

// Whether `value` is exactly 0 wherever the loads whose index uses `range` read 0 (masked off):
// loads, and what keeps a 0 a 0 whatever the other operands are (no 0 * inf: a float product
// needs both factors 0).
bool ZeroWhereMasked(const UOp* value, const UOp* range) {
  absl::flat_hash_map<const UOp*, bool> zero;
  for (const UOp* n : Toposort(value)) {
    bool z = false;
    auto of = [&](int i) { return zero[n->src(i)]; };
    const bool is_bool = n->dtype().scalar == Scalar::kBool;
    if ((n->op() == Op::kIndex && !n->dtype().ptr) || n->op() == Op::kLoad) {
      const UOp* idx = n->op() == Op::kLoad ? n->src(0)->src(1) : n->src(1);
      z = DependsOn(idx, range);
    } else if (n->op() == Op::kMul) {
      z = IsFloat(n->dtype().scalar) ? of(0) && of(1) : of(0) || of(1);
    } else if (n->op() == Op::kAnd) {
      z = of(0) || of(1);
    } else if (n->op() == Op::kAdd || n->op() == Op::kSub || n->op() == Op::kOr ||
               n->op() == Op::kXor) {
      z = of(0) && of(1);
    } else if (n->op() == Op::kNeg) {
      z = !is_bool && of(0);  // NEG of a bool is NOT
    } else if (n->op() == Op::kCast) {
      z = of(0);
    } else if (n->op() == Op::kWhere) {
      z = of(1) && of(2);
    }
    zero[n] = z;
  }
  return zero[value];
}

}  // namespace

absl::Status Scheduler::PadTo(const UOp* range, int64_t multiple) {
  const int64_t size = ConstSize(range);
  if (size < 0) return OptError("only constant sizes can be padded");
  if (range->arg().axis_type == AxisType::kUpcast || range->arg().axis_type == AxisType::kUnroll ||
      range->arg().axis_type == AxisType::kThread) {
    return OptError("cannot pad upcasted, unrolled or threaded axes");
  }
  // Not in tinygrad, which pads it: a tensor core's warp is the hardware's 32 lanes, and a
  // larger one would put two cores' fragments in one warp.
  if (range->arg().axis_type == AxisType::kWarp) return OptError("cannot pad a warp");
  if (multiple <= 0) return OptError("PADTO needs a positive multiple");
  const int64_t padded = (size + multiple - 1) / multiple * multiple;
  if (size <= padded / 4) return OptError("pad adds more than quadruple the work");
  if (padded == size) return OptError("no padding needed");
  const DType index = DType::Of(Scalar::kIndex);
  const UOp* grown = graph_->Make(Op::kRange, index, {IndexConst(padded)}, range->arg());
  // A padded element of a reduce axis must add nothing. tinygrad 0.12 checks only a few ops
  // and gets sums such as (a + 1).sum() wrong. uopd keeps tinygrad's form (only the loads
  // masked) when the summand is provably 0 wherever they read 0, and otherwise masks the summand
  // itself to the reduction's identity.
  const UOp* reduce = nullptr;
  bool mask_value = false;
  if (IsType(range, {AxisType::kReduce, AxisType::kGroupReduce})) {
    for (const UOp* n : Toposort(root_)) {
      if (n->op() == Op::kReduce &&
          std::find(n->src().begin() + 1, n->src().end(), range) != n->src().end()) {
        reduce = n;
      }
    }
    if (reduce == nullptr) return OptError("the reduce axis has no REDUCE");
    mask_value = reduce->arg().reduce_op != Op::kAdd || !ZeroWhereMasked(reduce->src(0), range);
  }
  root_ = Substitute(root_, {{range, grown}});
  // Every access whose index uses the range is masked to the old size. Sources first, so an
  // access whose index is computed from another access (a gather: out[i] = src[idx[i]]) is
  // built on that access masked, not on the unmasked one.
  const DType boolean = DType::Of(Scalar::kBool);
  absl::flat_hash_map<const UOp*, const UOp*> masked;
  const UOp* in_bounds = graph_->Make(Op::kCmplt, boolean, {grown, IndexConst(size)});
  for (const UOp* old : Toposort(root_)) {
    std::vector<const UOp*> src;
    bool changed = false;
    for (const UOp* s : old->src()) {
      auto it = masked.find(s);
      src.push_back(it == masked.end() ? s : it->second);
      changed |= src.back() != s;
    }
    const UOp* n =
        changed ? graph_->Make(old->op(), old->dtype(), std::move(src), old->arg()) : old;
    if (n != old) masked[old] = n;
    if (n->op() != Op::kIndex || !DependsOn(n->src(1), grown)) continue;
    const UOp* idx = n->src(1);
    const UOp* valid = graph_->Make(Op::kConst, boolean, {}, Arg::Bool(true));
    if (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) {
      valid = idx->src(0);
      idx = idx->src(1);
    }
    const UOp* guarded = graph_->Make(Op::kWhere, idx->dtype(),
                                      {graph_->Make(Op::kAnd, boolean, {in_bounds, valid}), idx,
                                       graph_->Make(Op::kConst, idx->dtype(), {}, Arg::Invalid())});
    masked[old] = graph_->Make(Op::kIndex, n->dtype(), {n->src(0), guarded}, n->arg());
  }
  if (auto it = masked.find(root_); it != masked.end()) root_ = it->second;
  if (mask_value) {
    const UOp* padded_reduce = nullptr;
    for (const UOp* n : Toposort(root_)) {
      if (n->op() == Op::kReduce &&
          std::find(n->src().begin() + 1, n->src().end(), grown) != n->src().end()) {
        padded_reduce = n;
      }
    }
    const UOp* value = padded_reduce->src(0);
    const UOp* identity =
        graph_->Make(Op::kConst, value->dtype(), {},
                     ReduceIdentityArg(padded_reduce->arg().reduce_op, value->dtype().scalar));
    std::vector<const UOp*> src(padded_reduce->src().begin(), padded_reduce->src().end());
    src[0] = graph_->Make(Op::kWhere, value->dtype(), {in_bounds, value, identity});
    root_ =
        Substitute(root_, {{padded_reduce, graph_->Make(Op::kReduce, padded_reduce->dtype(),
                                                        std::move(src), padded_reduce->arg())}});
  }
  return absl::OkStatus();
}

absl::Status Scheduler::Swap(const UOp* a, const UOp* b) {
  if (a->arg().axis_type != AxisType::kGlobal || b->arg().axis_type != AxisType::kGlobal) {
    return OptError("swap only for globals");
  }
  if (a == b) return OptError("swap needs two different axes");
  const UOp* new_a = graph_->Make(Op::kRange, a->dtype(), {a->src(0)},
                                  Arg::Range(b->arg().axis, AxisType::kGlobal));
  const UOp* new_b = graph_->Make(Op::kRange, b->dtype(), {b->src(0)},
                                  Arg::Range(a->arg().axis, AxisType::kGlobal));
  root_ = Substitute(root_, {{a, new_a}, {b, new_b}});
  return absl::OkStatus();
}

absl::Status Scheduler::Apply(const Opt& opt) {
  const std::vector<const UOp*> axes = Axes();
  auto has_type = [&](std::initializer_list<AxisType> types) {
    return std::any_of(axes.begin(), axes.end(), [&](const UOp* a) { return IsType(a, types); });
  };
  if (opt.op == OptOp::kNoLocals) {
    if (has_type({AxisType::kWarp, AxisType::kLocal, AxisType::kGroupReduce})) {
      return OptError("no locals can't have locals");
    }
    dont_use_locals_ = true;
    applied_.push_back(opt);
    return absl::OkStatus();
  }
  if (opt.op == OptOp::kTc) return ApplyTensorCore(opt);
  if ((opt.op == OptOp::kLocal || opt.op == OptOp::kGroup || opt.op == OptOp::kGroupTop) &&
      !target_.has_local) {
    return OptError("locals needed for opt");
  }
  UOPD_ASSIGN_OR_RETURN(const UOp* range, RealAxis(opt));
  if (opt.op == OptOp::kSwap) {
    if (opt.arg < 0 || opt.arg >= static_cast<int>(axes.size())) {
      return OptError(absl::StrCat("invalid axis ", opt.arg, " for SWAP"));
    }
    UOPD_RETURN_IF_ERROR(Swap(range, axes[opt.arg]));
    applied_.push_back(opt);
    return absl::OkStatus();
  }
  if (opt.op == OptOp::kPadTo) {
    UOPD_RETURN_IF_ERROR(PadTo(range, opt.arg));
    applied_.push_back(opt);
    return absl::OkStatus();
  }
  const int64_t amount = opt.arg == 0 ? RangeMax(range) + 1 : opt.arg;
  // Shared memory: what a group reduction keeps per workgroup.
  const std::vector<const UOp*> nodes = Toposort(root_);
  const bool has_reduce =
      std::any_of(nodes.begin(), nodes.end(), [](const UOp* n) { return n->op() == Op::kReduce; });
  if ((has_reduce && (opt.op == OptOp::kGroup || opt.op == OptOp::kGroupTop)) ||
      has_type({AxisType::kGroupReduce})) {
    int64_t bytes = amount;
    for (const UOp* a : axes) {
      if (IsType(a,
                 {AxisType::kUpcast, AxisType::kWarp, AxisType::kLocal, AxisType::kGroupReduce})) {
        bytes *= std::max<int64_t>(1, ConstSize(a));
      }
    }
    for (const UOp* n : Toposort(root_)) {
      if (n->op() == Op::kReduce) {
        bytes *= ScalarItemSize(n->dtype().scalar);
        break;
      }
    }
    if (bytes > target_.shared_max) return OptError("exceeds maximum shared memory size");
  }
  switch (opt.op) {
    case OptOp::kLocal:
      if (!IsType(range, {AxisType::kGlobal, AxisType::kLoop})) return OptError("only globals");
      if (dont_use_locals_) return OptError("can't use locals");
      UOPD_RETURN_IF_ERROR(ShiftTo(range, amount, AxisType::kLocal, /*top=*/false));
      break;
    case OptOp::kGroup:
    case OptOp::kGroupTop: {
      if (std::any_of(applied_.begin(), applied_.end(),
                      [](const Opt& o) { return o.op == OptOp::kTc; })) {
        return OptError("no grouping with tensor cores");
      }
      if (dont_use_locals_) return OptError("can't use locals");
      if (range->arg().axis_type != AxisType::kReduce) return OptError("only reduce axes group");
      // The REDUCE closing this range must not sit inside another reduction: none of the ranges
      // it sits inside (tinygrad's UOp.ranges) is a reduction's. One that holds a reduction of
      // its own (a variance's mean) may group.
      SymbolicRewriter rewriter(*graph_);
      for (const UOp* n : Toposort(root_)) {
        if (n->op() != Op::kReduce) continue;
        bool closes = false;
        for (size_t i = 1; i < n->num_src() && !closes; ++i) {
          closes = rewriter.Ranges(n->src(i)).contains(range);
        }
        if (!closes) continue;
        for (const UOp* m : rewriter.Ranges(n)) {
          if (IsType(m, {AxisType::kReduce, AxisType::kUnroll, AxisType::kGroupReduce})) {
            return OptError("cannot have a GROUP_REDUCE inside another reduce");
          }
        }
        break;
      }
      UOPD_RETURN_IF_ERROR(
          ShiftTo(range, amount, AxisType::kGroupReduce, opt.op == OptOp::kGroupTop));
      break;
    }
    case OptOp::kUnroll:
      if (amount > 32) return OptError("don't unroll more than 32");
      UOPD_RETURN_IF_ERROR(ShiftTo(range, amount, AxisType::kUnroll, /*top=*/false));
      break;
    case OptOp::kUpcast:
      if (!IsType(range, {AxisType::kGlobal, AxisType::kLocal, AxisType::kLoop})) {
        return OptError("upcast is for output axes");
      }
      if (amount > 16) return OptError("don't upcast more than 16");
      UOPD_RETURN_IF_ERROR(ShiftTo(range, amount, AxisType::kUpcast, /*top=*/false));
      break;
    case OptOp::kThread: {
      if (!target_.has_threads) return OptError("target does not support threads");
      std::vector<const UOp*> globalizable = GlobalizableRanges();
      if (std::find(globalizable.begin(), globalizable.end(), range) == globalizable.end()) {
        return OptError("can only thread globalizable ranges");
      }
      if (amount > target_.max_threads) {
        return OptError(absl::StrCat("too many threads: ", amount, " > ", target_.max_threads));
      }
      if (has_type({AxisType::kThread})) return OptError("already threaded");
      UOPD_RETURN_IF_ERROR(ShiftTo(range, amount, AxisType::kThread, /*top=*/true));
      break;
    }
    default:
      return absl::InternalError("unhandled opt");
  }
  applied_.push_back(opt);
  return absl::OkStatus();
}

std::shared_ptr<const KernelAst> Scheduler::Finish(bool hash) const {
  // END and REDUCE list the plain ranges found, in order, in the expressions that replaced
  // their ranges (tinygrad's pm_flatten_range).
  Graph& g = *graph_;
  absl::flat_hash_map<const UOp*, const UOp*> rebuilt;
  for (const UOp* node : Toposort(root_)) {
    std::vector<const UOp*> src;
    for (const UOp* s : node->src()) src.push_back(rebuilt.at(s));
    if ((node->op() == Op::kEnd || node->op() == Op::kReduce || node->op() == Op::kContract ||
         node->op() == Op::kUnroll) &&
        src.size() > 1) {
      std::vector<const UOp*> flat = {src[0]};
      for (size_t i = 1; i < src.size(); ++i) {
        for (const UOp* n : RangesInOrder(src[i])) {
          if (std::find(flat.begin() + 1, flat.end(), n) == flat.end()) flat.push_back(n);
        }
      }
      src = std::move(flat);
    }
    rebuilt[node] = g.Make(node->op(), node->dtype(), std::move(src), node->arg());
  }
  auto ast = std::make_shared<KernelAst>();
  ast->root = CopyInto(ast->graph, rebuilt.at(root_));
  if (hash) ast->hash = AstHashHex(ast->root);
  return ast;
}

}  // namespace uopd
