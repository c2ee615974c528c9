#include "core/codegen/access_bounds.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"

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

// Exact arithmetic for the linear forms here: every value stays within +-2^100, so a sum or
// product of two of them is computed exactly (Int128) before it is checked, and a step past
// the limit gives up the proof instead of saturating (a saturated partial sum that later terms
// pull back would understate the bound).
constexpr Int128 kExactLimit = Int128{1} << 100;
bool Exact(Int128 v) { return v >= -kExactLimit && v <= kExactLimit; }
std::optional<Int128> ExactAdd(Int128 a, Int128 b) {
  if (!Exact(a) || !Exact(b) || !Exact(a + b)) return std::nullopt;
  return a + b;
}
std::optional<Int128> ExactMul(Int128 a, Int128 b) {
  if (!Exact(a) || !Exact(b)) return std::nullopt;
  const Int128 product = SaturatingMul(a, b);  // exact below 2^125
  if (!Exact(product)) return std::nullopt;
  return product;
}

// Whether the value of `e` (an ADD, SUB or MUL walked into a linear form) is the integer its
// operands give: an operation that may overflow its dtype gets the dtype's whole range.
bool WalksExactly(const UOp* e, ValueRanges& ranges) {
  const Interval r = ranges.Get(e);
  const Interval whole = DTypeRange(e->dtype().scalar);
  return r.min > whole.min || r.max < whole.max;
}

// e = sum of coefficient x atom + constant, exactly: ADD, SUB and MUL by a constant are walked
// through (each proven not to wrap), any other node is an atom.
struct LinearForm {
  absl::flat_hash_map<const UOp*, Int128> terms;  // no zero coefficients
  Int128 constant = 0;
};

// Bounds the work per access: index expressions are small; a hostile one is refused, not walked.
constexpr int kMaxLinearFormNodes = 256;

std::optional<LinearForm> Decompose(const UOp* root, ValueRanges& ranges) {
  LinearForm form;
  std::vector<std::pair<const UOp*, Int128>> stack = {{root, 1}};
  for (int visits = 0; !stack.empty(); ++visits) {
    if (visits == kMaxLinearFormNodes) return std::nullopt;
    auto [e, mul] = stack.back();
    stack.pop_back();
    if (e->IsConst() && !e->IsInvalid()) {
      std::optional<Int128> term = ExactMul(mul, ConstIntValue(*e));
      std::optional<Int128> sum = term ? ExactAdd(form.constant, *term) : std::nullopt;
      if (!sum) return std::nullopt;
      form.constant = *sum;
      continue;
    }
    const bool walked = e->num_src() == 2 &&
                        (e->op() == Op::kAdd || e->op() == Op::kSub ||
                         (e->op() == Op::kMul && (e->src(0)->IsConst() || e->src(1)->IsConst())));
    if (walked && !WalksExactly(e, ranges)) return std::nullopt;
    if (!walked) {
      std::optional<Int128> coefficient = ExactAdd(form.terms[e], mul);
      if (!coefficient) return std::nullopt;
      form.terms[e] = *coefficient;
    } else if (e->op() == Op::kAdd) {
      stack.push_back({e->src(0), mul});
      stack.push_back({e->src(1), mul});
    } else if (e->op() == Op::kSub) {
      stack.push_back({e->src(0), mul});
      stack.push_back({e->src(1), -mul});
    } else {
      const bool first_const = e->src(0)->IsConst();
      const UOp* c = e->src(first_const ? 0 : 1);
      if (c->IsInvalid()) return std::nullopt;
      std::optional<Int128> scaled = ExactMul(mul, ConstIntValue(*c));
      if (!scaled) return std::nullopt;
      stack.push_back({e->src(first_const ? 1 : 0), *scaled});
    }
  }
  absl::erase_if(form.terms, [](const auto& term) { return term.second == 0; });
  return form;
}

// e = leaf * mul + add, for a single DEFINE_VAR or RANGE leaf and mul > 0.
struct Linear {
  const UOp* leaf;
  Int128 mul, add;
};

// `e` as a Linear: its linear form (exact, no step wrapping: a guard `x * 2 < 10` whose product
// may wrap bounds nothing about x) when that is one such leaf's term and a constant.
std::optional<Linear> AsLinear(const UOp* e, ValueRanges& ranges) {
  std::optional<LinearForm> form = Decompose(e, ranges);
  if (!form || form->terms.size() != 1) return std::nullopt;
  const auto& [leaf, mul] = *form->terms.begin();
  if ((leaf->op() != Op::kDefineVar && leaf->op() != Op::kRange) || mul <= 0) return std::nullopt;
  return Linear{leaf, mul, form->constant};
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

// Bounds of `idx` read through the conditions' expressions: where idx = k x E + rest for a
// constrained expression E (its atoms in idx at k times their coefficients in E, k > 0), E
// contributes k x its narrowed interval and rest its atoms' narrowed ranges. A padded matmul's
// A[17 * row + k] under `row < 33` is in bounds though `row` and `17 * row` are different
// expressions of the same atoms. nullopt: no bound (a step left exact arithmetic).
std::optional<Interval> BoundThroughConstraints(const UOp* idx,
                                                const std::vector<Constraint>& constraints,
                                                ValueRanges& ranges, ValueRanges& narrowed) {
  std::optional<LinearForm> form = Decompose(idx, ranges);
  if (!form) return std::nullopt;
  Interval bound{form->constant, form->constant};
  // bound += k x r; false when a step is not exact.
  auto add = [&](Int128 k, Interval r) {
    if (k < 0) std::swap(r.min, r.max);
    std::optional<Int128> lo = ExactMul(k, r.min), hi = ExactMul(k, r.max);
    if (lo) lo = ExactAdd(bound.min, *lo);
    if (hi) hi = ExactAdd(bound.max, *hi);
    if (!lo || !hi) return false;
    bound = {*lo, *hi};
    return true;
  };
  for (const Constraint& c : constraints) {
    if (c.expr->op() == Op::kRange || c.expr->op() == Op::kDefineVar) continue;  // an atom
    std::optional<LinearForm> e = Decompose(c.expr, ranges);
    if (!e || e->terms.empty()) continue;
    const auto& [first, first_coefficient] = *e->terms.begin();
    auto at = form->terms.find(first);
    if (at == form->terms.end() || at->second % first_coefficient != 0) continue;
    const Int128 k = at->second / first_coefficient;
    if (k <= 0) continue;
    const bool matches = std::all_of(e->terms.begin(), e->terms.end(), [&](const auto& term) {
      auto it = form->terms.find(term.first);
      return it != form->terms.end() && ExactMul(k, term.second) == it->second;
    });
    if (!matches) continue;
    for (const auto& [atom, coefficient] : e->terms) form->terms.erase(atom);
    // idx = k x (E - e.constant) + rest: E's constant comes off the bound.
    if (!add(-k, Interval{e->constant, e->constant}) || !add(k, narrowed.Get(c.expr))) {
      return std::nullopt;
    }
  }
  for (const auto& [atom, coefficient] : form->terms) {
    if (!add(coefficient, narrowed.Get(atom))) return std::nullopt;
  }
  return bound;
}

}  // namespace

std::optional<Interval> BoundAccess(const UOp* idx, const std::vector<const UOp*>& conditions,
                                    int64_t size, ValueRanges& ranges) {
  auto within = [size](const Interval& r) { return r.min >= 0 && r.max < size; };
  Interval plain = ranges.Get(idx);
  if (within(plain)) return plain;
  if (conditions.empty()) return std::nullopt;

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
    if (auto linear = AsLinear(c.expr, ranges)) {
      narrow(linear->leaf, CeilDiv(c.lo - linear->add, linear->mul),
             FloorDiv(c.hi - linear->add, linear->mul));
    }
  }
  for (const auto& [node, interval] : overrides) {
    // The conditions cannot all hold: the access never happens.
    if (interval.min > interval.max) return Interval{1, 0};
  }
  ValueRanges narrowed(std::move(overrides));
  Interval r = narrowed.Get(idx);
  if (within(r)) return r;
  std::optional<Interval> through = BoundThroughConstraints(idx, constraints, ranges, narrowed);
  if (through && within(*through)) return through;
  return std::nullopt;
}

bool ProveInBounds(const UOp* idx, const std::vector<const UOp*>& conditions, int64_t size,
                   ValueRanges& ranges) {
  return BoundAccess(idx, conditions, size, ranges).has_value();
}

}  // namespace uopd
