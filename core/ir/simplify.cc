#include "core/ir/simplify.h"

#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/ir/evaluate.h"
#include "core/ir/printer.h"
#include "core/ir/value_range.h"

namespace uopd {
namespace {

struct RuleContext {
  Graph& graph;
  ValueRanges& ranges;
};

using Rule = std::optional<const UOp*> (*)(const UOp& node, RuleContext& ctx);

bool IsIntConst(const UOp* node, Int128 value) {
  return node->IsConst() && !node->IsInvalid() && IsIntLike(node->dtype().scalar) &&
         ConstIntValue(*node) == value;
}

bool IsPositiveConst(const UOp* node) {
  return node->IsConst() && !node->IsInvalid() && IsInt(node->dtype().scalar) &&
         ConstIntValue(*node) > 0;
}

const UOp* MakeConst(RuleContext& ctx, const DType& dtype, Int128 value) {
  value = WrapToDType(value, dtype.scalar);
  if (dtype.scalar == Scalar::kBool) {
    return ctx.graph.Make(Op::kConst, dtype, {}, Arg::Bool(value != 0));
  }
  Arg arg = Arg::I64(static_cast<int64_t>(value));
  if (value > std::numeric_limits<int64_t>::max()) arg.kind = ArgKind::kU64;
  return ctx.graph.Make(Op::kConst, dtype, {}, arg);
}

// Constant folding: every operand a constant, evaluated with the IR's semantics. Division by
// zero does not fold (the lowering defines it).
std::optional<const UOp*> FoldConstants(const UOp& node, RuleContext& ctx) {
  if (!IsAlu(node.op()) || node.op() == Op::kThreefry || node.num_src() == 0) return std::nullopt;
  for (const UOp* src : node.src()) {
    if (!src->IsConst() || src->IsInvalid() || !IsIntLike(src->dtype().scalar)) return std::nullopt;
  }
  auto value = EvaluateInt(&node, {});
  if (!value.ok()) return std::nullopt;
  return MakeConst(ctx, node.dtype(), *value);
}

// x+0, 0+x, x-0, x*1, 1*x, x//1 -> x; x*0, x%1 -> 0.
std::optional<const UOp*> Identities(const UOp& node, RuleContext& ctx) {
  if (node.num_src() != 2 || !IsInt(node.dtype().scalar)) return std::nullopt;
  const UOp* a = node.src(0);
  const UOp* b = node.src(1);
  switch (node.op()) {
    case Op::kAdd:
      if (IsIntConst(b, 0)) return a;
      if (IsIntConst(a, 0)) return b;
      break;
    case Op::kSub:
      if (IsIntConst(b, 0)) return a;
      break;
    case Op::kMul:
      if (IsIntConst(b, 1)) return a;
      if (IsIntConst(a, 1)) return b;
      if (IsIntConst(a, 0) || IsIntConst(b, 0)) return MakeConst(ctx, node.dtype(), 0);
      break;
    case Op::kIdiv:
      if (IsIntConst(b, 1)) return a;
      break;
    case Op::kMod:
      if (IsIntConst(b, 1)) return MakeConst(ctx, node.dtype(), 0);
      break;
    default:
      break;
  }
  return std::nullopt;
}

// (x//a)//b -> x//(a*b) and (x%a)%b -> x%b when b divides a; a, b positive constants.
// Both hold for C's truncating division whatever the sign of x.
std::optional<const UOp*> NestedDivMod(const UOp& node, RuleContext& ctx) {
  if ((node.op() != Op::kIdiv && node.op() != Op::kMod) || !IsPositiveConst(node.src(1))) {
    return std::nullopt;
  }
  const UOp* inner = node.src(0);
  if (inner->op() != node.op() || !IsPositiveConst(inner->src(1))) return std::nullopt;
  Int128 a = ConstIntValue(*inner->src(1));
  Int128 b = ConstIntValue(*node.src(1));
  if (node.op() == Op::kIdiv) {
    Int128 product = a * b;
    if (product > DTypeRange(node.dtype().scalar).max) return std::nullopt;
    return ctx.graph.Make(Op::kIdiv, node.dtype(),
                          {inner->src(0), MakeConst(ctx, node.dtype(), product)});
  }
  if (a % b != 0) return std::nullopt;
  return ctx.graph.Make(Op::kMod, node.dtype(), {inner->src(0), node.src(1)});
}

// x%c -> x and x//c -> 0 when 0 <= x < c; (x*c)//c -> x when x*c cannot wrap.
std::optional<const UOp*> DivModByRange(const UOp& node, RuleContext& ctx) {
  if ((node.op() != Op::kIdiv && node.op() != Op::kMod) || !IsPositiveConst(node.src(1))) {
    return std::nullopt;
  }
  const UOp* x = node.src(0);
  Int128 c = ConstIntValue(*node.src(1));
  Interval range = ctx.ranges.Get(x);
  if (range.min >= 0 && range.max < c) {
    return node.op() == Op::kMod ? x : MakeConst(ctx, node.dtype(), 0);
  }
  if (node.op() == Op::kIdiv && x->op() == Op::kMul && IsIntConst(x->src(1), c)) {
    // The MUL's range is sound (full dtype range if it may wrap), so a bounded one did not wrap.
    if (range.max < DTypeRange(node.dtype().scalar).max &&
        range.min > DTypeRange(node.dtype().scalar).min) {
      return x->src(0);
    }
  }
  return std::nullopt;
}

// Comparisons and selects that value ranges decide.
std::optional<const UOp*> DecideByRange(const UOp& node, RuleContext& ctx) {
  if (IsComparison(node.op()) && IsIntLike(node.src(0)->dtype().scalar)) {
    Interval r = ctx.ranges.Get(&node);
    if (r.IsConst()) return MakeConst(ctx, node.dtype(), r.min);
  }
  if (node.op() == Op::kWhere) {
    Interval c = ctx.ranges.Get(node.src(0));
    if (c.IsConst()) return c.min ? node.src(1) : node.src(2);
  }
  return std::nullopt;
}

constexpr Rule kRules[] = {FoldConstants, Identities, NestedDivMod, DivModByRange, DecideByRange};
constexpr int kMaxStepsPerNode = 64;

}  // namespace

absl::StatusOr<const UOp*> SimplifyIndexArithmetic(Graph& graph, const UOp* root) {
  ValueRanges ranges;
  RuleContext ctx{graph, ranges};
  absl::flat_hash_map<const UOp*, const UOp*> replaced;
  for (const UOp* node : Toposort(root)) {
    std::vector<const UOp*> src;
    src.reserve(node->num_src());
    bool changed = false;
    for (const UOp* s : node->src()) {
      src.push_back(replaced.at(s));
      changed |= src.back() != s;
    }
    const UOp* current =
        changed ? graph.Make(node->op(), node->dtype(), std::move(src), node->arg()) : node;
    for (int step = 0;; ++step) {
      if (step == kMaxStepsPerNode) {
        return absl::InternalError(absl::StrCat("simplify: no fixed point after ", step,
                                                " steps at ", DescribeNode(*node)));
      }
      if (current->dtype().ptr || !IsIntLike(current->dtype().scalar)) {
        // Only WHERE on values may still be decided by an integer condition.
        if (current->op() != Op::kWhere) break;
      }
      std::optional<const UOp*> next;
      for (Rule rule : kRules) {
        next = rule(*current, ctx);
        if (next && *next != current) break;
        next.reset();
      }
      if (!next) break;
      current = *next;
    }
    replaced.emplace(node, current);
  }
  return replaced.at(root);
}

}  // namespace uopd
