// The TC opt: tinygrad 0.12's Scheduler._apply_tc_opt (codegen/opt/postrange.py). It gives the
// kernel a tensor core's range layout (a 32-thread WARP range whose bits index the M and N
// tiles, UPCASTs for the elements a thread holds, UNROLLs for K); with use_tensor_cores 1 the
// reduction then becomes the core's WMMA instruction over each thread's fragments (2: the
// shape alone).
#include <algorithm>
#include <array>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/ir/symbolic.h"
#include "core/ir/uop.h"
#include "core/ir/value_range.h"
#include "core/opt/scheduler.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

int64_t ConstSizeOf(const UOp* range) {
  const UOp* size = range->src(0);
  return size->IsConst() ? static_cast<int64_t>(ConstIntValue(*size)) : -1;
}

// Largest axis id first (tinygrad sorts by arg[0], reversed).
void SortByAxisDescending(std::vector<const UOp*>& ranges) {
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const UOp* a, const UOp* b) { return a->arg().axis > b->arg().axis; });
}

// A tensor core has three ranges: N (only in the second input), M (only in the first) and the
// reduction's K. The `axis`-th of their combinations, N varied slowest (itertools.product's
// order), or none.
std::optional<std::array<const UOp*, 3>> ChooseTensorCoreAxes(SymbolicRewriter& open,
                                                              const UOp* in0, const UOp* in1,
                                                              const UOp* reduce, int axis) {
  auto only_in = [&](const UOp* a, const UOp* b) {
    std::vector<const UOp*> out;
    const absl::flat_hash_set<const UOp*>& other = open.Ranges(b);
    for (const UOp* r : open.Ranges(a)) {
      if (!other.contains(r)) out.push_back(r);
    }
    SortByAxisDescending(out);
    return out;
  };
  const std::vector<const UOp*> in0_ranges = only_in(in0, in1);
  const std::vector<const UOp*> in1_ranges = only_in(in1, in0);
  std::vector<const UOp*> red_ranges;
  for (size_t i = 1; i < reduce->num_src(); ++i) {
    if (reduce->src(i)->op() == Op::kRange) red_ranges.push_back(reduce->src(i));
  }
  SortByAxisDescending(red_ranges);
  const int64_t n = static_cast<int64_t>(in1_ranges.size());
  const int64_t m = static_cast<int64_t>(in0_ranges.size());
  const int64_t k = static_cast<int64_t>(red_ranges.size());
  if (n == 0 || m == 0 || k == 0 || axis < 0 || axis >= n * m * k) return std::nullopt;
  return std::array<const UOp*, 3>{in1_ranges[axis / (m * k)], in0_ranges[(axis / k) % m],
                                   red_ranges[axis % k]};
}

absl::Status TcError(absl::string_view why) { return absl::InvalidArgumentError(why); }

}  // namespace

absl::Status Scheduler::ApplyTensorCore(const Opt& opt) {
  if (!applied_.empty()) return TcError("tensor core opts must be first");
  if (!opt.axis.has_value()) return TcError("tensor core opts must have an axis");
  const auto [tc_select, tc_opt, use_tensor_cores] = opt.tc;
  if (tc_select < -1 || tc_select >= static_cast<int>(target_.tensor_cores.size())) {
    return TcError("tensor core opts must have valid tc_select");
  }
  if (tc_opt < 0 || tc_opt > 2) return TcError("tensor core opts must have valid tc_opt");
  if (use_tensor_cores <= 0 || use_tensor_cores > 2) {
    return TcError("use_tensor_cores value is not valid");
  }
  const UOp* reduce = nullptr;
  for (const UOp* n : Toposort(root_)) {
    if (n->op() == Op::kReduce) {
      reduce = n;
      break;
    }
  }
  if (reduce == nullptr) return TcError("no reduce ops for TensorCore");
  // Not in tinygrad: the core's warp must be the kernel's only one (its lanes are the threads'
  // fragment holders).
  for (const UOp* n : Toposort(root_)) {
    if (n->op() == Op::kRange && n->arg().axis_type == AxisType::kWarp) {
      return TcError("tensor cores need a kernel without a WARP range of its own");
    }
  }
  const absl::Status none = TcError("no tensor core available");
  if (reduce->arg().reduce_op != Op::kAdd) return none;
  const UOp* mul = reduce->src(0)->op() == Op::kCast ? reduce->src(0)->src(0) : reduce->src(0);
  if (mul->op() != Op::kMul) return none;
  const UOp* in0 = mul->src(0);
  const UOp* in1 = mul->src(1);

  std::vector<TensorCore> cores = target_.tensor_cores;
  if (tc_select >= 0) cores = {target_.tensor_cores[tc_select]};
  SymbolicRewriter open(*graph_);  // for tinygrad's UOp.ranges
  for (const TensorCore& tc : cores) {
    if (absl::StartsWith(target_.device, "CUDA") && tc.dtype_in == Scalar::kFloat32 &&
        !target_.allow_tf32) {
      continue;
    }
    if (in0->dtype().scalar != tc.dtype_in || in1->dtype().scalar != tc.dtype_in ||
        reduce->dtype().scalar != tc.dtype_out) {
      continue;
    }
    std::optional<std::array<const UOp*, 3>> chosen =
        ChooseTensorCoreAxes(open, in0, in1, reduce, *opt.axis);
    if (!chosen.has_value()) continue;
    std::array<const UOp*, 3> axes = *chosen;

    const UOp* before = root_;
    const int64_t ids_before = next_range_id_;
    // Ranges that are not a multiple of the core's dims are padded (opt level 2 only).
    bool fits = true;
    for (int i = 0; i < 3 && fits; ++i) {
      const int64_t size = ConstSizeOf(axes[i]);
      if (size > 0 && size % tc.dims[i] == 0) continue;
      if (tc_opt < 2 || size < 0) {
        fits = false;
        break;
      }
      const std::vector<const UOp*> order = Axes();
      const auto at = std::find(order.begin(), order.end(), axes[i]) - order.begin();
      if (!PadTo(axes[i], tc.dims[i]).ok()) {
        fits = false;
        break;
      }
      axes[i] = Axes()[at];
    }
    if (!fits) {
      root_ = before;
      next_range_id_ = ids_before;
      continue;
    }
    // The warp is made whole, and its bits become the LOCAL parts of N and M, in the core's
    // order ("l0" takes warp % 2, the next warp / 2 % 2, ...).
    const DType index = DType::Of(Scalar::kIndex);
    const UOp* warp = graph_->Make(Op::kRange, index, {IndexConst(tc.threads)},
                                   Arg::Range({-1}, AxisType::kWarp));
    absl::Status status;
    // What each of the core's factors became, in the order of TensorCore::BaseShape().
    std::vector<const UOp*> factors;
    auto shift_new = [&](const UOp* range, AxisType type, const UOp** kept) {
      const int64_t id = next_range_id_;
      status = ShiftTo(range, 2, type, /*top=*/false, kept);
      factors.push_back(graph_->Make(Op::kRange, index, {IndexConst(2)}, Arg::Range({id}, type)));
    };
    for (const std::string& step : tc.opts) {
      const int dim = step[1] - '0';
      if (step[0] == 'l') {
        const UOp* bit = graph_->Make(Op::kMod, index, {warp, IndexConst(2)});
        status = ShiftTo(axes[dim], 2, AxisType::kLocal, /*top=*/false, &axes[dim], bit);
        factors.push_back(bit);
        warp = graph_->Make(Op::kIdiv, index, {warp, IndexConst(2)});
      } else {
        shift_new(axes[dim], AxisType::kUpcast, &axes[dim]);
      }
      if (!status.ok()) break;
    }
    for (int i = 0; i < tc.ReduceAxes() && status.ok(); ++i) {
      shift_new(axes[2], AxisType::kUnroll, &axes[2]);
    }
    if (status.ok() && use_tensor_cores == 1) status = ReplaceByWmma(tc, factors);
    if (!status.ok()) {
      root_ = before;
      next_range_id_ = ids_before;
      return status;
    }
    applied_.push_back(opt);
    tensor_core_axes_ = axes;
    return absl::OkStatus();
  }
  return none;
}

absl::Status Scheduler::ReplaceByWmma(const TensorCore& tc,
                                      const std::vector<const UOp*>& factors) {
  const std::vector<std::string> shape = tc.BaseShape();
  // The reduction the core's K unrolls now split (tinygrad tags it "TC").
  const UOp* first_unroll = factors[shape.size() - tc.ReduceAxes()];
  const UOp* reduce = nullptr;
  for (const UOp* n : Toposort(root_)) {
    if (n->op() != Op::kReduce) continue;
    for (size_t i = 1; i < n->num_src() && reduce == nullptr; ++i) {
      if (DependsOn(n->src(i), first_unroll)) reduce = n;
    }
    if (reduce != nullptr) break;
  }
  if (reduce == nullptr) return TcError("no reduce ops for TensorCore");
  // Padding K may have masked the summand to 0 outside the real K (PadTo): the mask, which
  // depends on K alone, goes on both operands, so that each reads it at its own K.
  const UOp* value = reduce->src(0);
  std::vector<const UOp*> masks;
  auto is_zero = [](const UOp* c) {
    if (!c->IsConst()) return false;
    const Arg& a = c->arg();
    return (a.kind == ArgKind::kF64 && a.f == 0) || (a.kind == ArgKind::kI64 && a.i == 0);
  };
  while (value->op() == Op::kWhere && is_zero(value->src(2))) {
    masks.push_back(value->src(0));
    value = value->src(1);
  }
  const UOp* mul = value->op() == Op::kCast ? value->src(0) : value;
  if (mul->op() != Op::kMul) return TcError("no tensor core available");
  // Each operand's index takes the factors its fragment layout needs (tinygrad's swizzle).
  const std::array<std::vector<int>, 2> permutations = tc.OperandPermutations();
  std::array<const UOp*, 2> operands;
  for (int i = 0; i < 2; ++i) {
    std::vector<std::pair<const UOp*, const UOp*>> map;
    for (size_t j = 0; j < factors.size(); ++j) {
      map.emplace_back(factors[j], factors[permutations[i][j]]);
    }
    const UOp* operand = mul->src(i);
    for (const UOp* mask : masks) {
      operand = graph_->Make(
          Op::kWhere, operand->dtype(),
          {mask, operand, graph_->Make(Op::kConst, operand->dtype(), {}, Arg::F64(0.0))});
    }
    operands[i] = Substitute(operand, map);
  }
  const std::vector<std::string> fragment = tc.FragmentFactors();
  auto fragment_ranges = [&](int elements) {
    std::vector<const UOp*> out;
    for (int bits = 0; (1 << bits) < elements; ++bits) {
      out.push_back(factors[std::find(shape.begin(), shape.end(), fragment[bits]) - shape.begin()]);
    }
    return out;
  };
  auto contract = [&](const UOp* value, int elements) {
    std::vector<const UOp*> src = {value};
    for (const UOp* r : fragment_ranges(elements)) src.push_back(r);
    return graph_->Make(Op::kContract, DType{value->dtype().scalar, elements}, std::move(src));
  };
  const DType out{tc.dtype_out, tc.elements_per_thread[2]};
  Arg arg;
  arg.kind = ArgKind::kStr;
  arg.str = tc.Name();
  arg.ints = {tc.dims[0],
              tc.dims[1],
              tc.dims[2],
              tc.threads,
              tc.elements_per_thread[0],
              tc.elements_per_thread[1],
              tc.elements_per_thread[2]};
  const UOp* wmma = graph_->Make(Op::kWmma, out,
                                 {contract(operands[0], tc.elements_per_thread[0]),
                                  contract(operands[1], tc.elements_per_thread[1]),
                                  graph_->Make(Op::kConst, out, {}, Arg::F64(0.0))},
                                 std::move(arg));
  std::vector<const UOp*> unroll_src = {wmma};
  for (const UOp* r : fragment_ranges(tc.elements_per_thread[2])) unroll_src.push_back(r);
  const UOp* result = graph_->Make(Op::kUnroll, DType::Of(tc.dtype_out), std::move(unroll_src));
  // The reduction's other ranges (K beyond one core's) stay a sum of the core's results.
  std::vector<const UOp*> rest = {result};
  for (size_t i = 1; i < reduce->num_src(); ++i) {
    for (const UOp* r : RangesInOrder(reduce->src(i))) {
      if (r->arg().axis_type == AxisType::kUnroll &&
          std::find(factors.begin(), factors.end(), r) != factors.end()) {
        continue;
      }
      if (std::find(rest.begin() + 1, rest.end(), r) == rest.end()) rest.push_back(r);
    }
  }
  if (rest.size() > 1) {
    result =
        graph_->Make(Op::kReduce, DType::Of(tc.dtype_out), std::move(rest), Arg::Reduce(Op::kAdd));
  }
  root_ = Substitute(root_, {{reduce, result}});
  return absl::OkStatus();
}

}  // namespace uopd
