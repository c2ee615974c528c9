#include "core/codegen/access_bounds.h"

#include <optional>

namespace uopd {
namespace {

bool IsTrue(const UOp* node) {
  return node->IsConst() && node->dtype().scalar == Scalar::kBool && node->arg().b;
}

// `expr` lies in [lo, hi] whenever the condition holds.
struct Constraint {
  const UOp* expr;
  Int128 lo, hi;
};

// e = leaf * mul + add, for a single DEFINE_VAR or RANGE leaf and mul > 0.
struct Linear {
  const UOp* leaf;
  Int128 mul, add;
};

std::optional<Linear> AsLinear(const UOp* e) {
  Int128 mul = 1, add = 0;
  // Walk down one spine: each step peels a constant operand off an ADD, SUB or MUL.
  for (int steps = 0; steps < 64; ++steps) {
    if (e->op() == Op::kDefineVar || e->op() == Op::kRange) return Linear{e, mul, add};
    if (e->num_src() != 2) return std::nullopt;
    const UOp* a = e->src(0);
    const UOp* b = e->src(1);
    bool a_const = a->IsConst() && !a->IsInvalid();
    bool b_const = b->IsConst() && !b->IsInvalid();
    if (a_const == b_const) return std::nullopt;
    const UOp* var_side = a_const ? b : a;
    Int128 c = ConstIntValue(a_const ? *a : *b);
    switch (e->op()) {
      case Op::kAdd:
        add += mul * c;
        break;
      case Op::kSub:
        if (a_const) return std::nullopt;  // c - x: decreasing
        add -= mul * c;
        break;
      case Op::kMul:
        if (c <= 0) return std::nullopt;
        mul *= c;
        break;
      default:
        return std::nullopt;
    }
    e = var_side;
  }
  return std::nullopt;
}

Int128 FloorDiv(Int128 a, Int128 b) {
  Int128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
Int128 CeilDiv(Int128 a, Int128 b) { return -FloorDiv(-a, b); }

// Collects the constraints implied by `cond` being true (ANDs of comparisons).
void Collect(const UOp* cond, ValueRanges& ranges, std::vector<Constraint>& out) {
  std::vector<const UOp*> stack = {cond};
  while (!stack.empty()) {
    const UOp* c = stack.back();
    stack.pop_back();
    if (c->op() == Op::kAnd && c->dtype().scalar == Scalar::kBool) {
      stack.push_back(c->src(0));
      stack.push_back(c->src(1));
      continue;
    }
    bool negated = false;
    // not(x) is written CMPNE(x, True) or XOR(x, True).
    if ((c->op() == Op::kCmpne || c->op() == Op::kXor) && IsTrue(c->src(1))) {
      negated = true;
      c = c->src(0);
    }
    if (c->op() != Op::kCmplt || !IsIntLike(c->src(0)->dtype().scalar)) continue;
    const UOp* a = c->src(0);
    const UOp* b = c->src(1);
    Interval ra = ranges.Get(a), rb = ranges.Get(b);
    if (!negated) {  // a < b: a <= max(b) - 1, b >= min(a) + 1
      out.push_back({a, ra.min, rb.max - 1});
      out.push_back({b, ra.min + 1, rb.max});
    } else {  // a >= b: a >= min(b), b <= max(a)
      out.push_back({a, rb.min, ra.max});
      out.push_back({b, rb.min, ra.max});
    }
  }
}

}  // namespace

bool ProveInBounds(const UOp* idx, const std::vector<const UOp*>& conditions, int64_t size,
                   ValueRanges& ranges) {
  Interval plain = ranges.Get(idx);
  if (plain.min >= 0 && plain.max < size) return true;
  if (conditions.empty()) return false;

  std::vector<Constraint> constraints;
  for (const UOp* cond : conditions) Collect(cond, ranges, constraints);
  absl::flat_hash_map<const UOp*, Interval> overrides;
  auto narrow = [&](const UOp* node, Int128 lo, Int128 hi) {
    auto it = overrides.find(node);
    Interval current = it != overrides.end() ? it->second : ranges.Get(node);
    overrides[node] = {std::max(current.min, lo), std::min(current.max, hi)};
  };
  for (const Constraint& c : constraints) {
    narrow(c.expr, c.lo, c.hi);
    if (auto linear = AsLinear(c.expr)) {
      narrow(linear->leaf, CeilDiv(c.lo - linear->add, linear->mul),
             FloorDiv(c.hi - linear->add, linear->mul));
    }
  }
  for (const auto& [node, interval] : overrides) {
    // The conditions cannot all hold: the access never happens.
    if (interval.min > interval.max) return true;
  }
  ValueRanges narrowed(std::move(overrides));
  Interval r = narrowed.Get(idx);
  return r.min >= 0 && r.max < size;
}

}  // namespace uopd
