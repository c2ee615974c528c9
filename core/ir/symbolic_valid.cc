// SymbolicRewriter: simplification under a valid (tinygrad's uop_given_valid and
// simplify_valid) and `sym`'s extra rules.
#include "core/ir/symbolic.h"
#include "core/ir/symbolic_internal.h"

namespace uopd {

// The rewriter's helpers are this file's vocabulary.
using namespace symbolic_internal;  // NOLINT(build/namespaces)

// ---- sym: valid simplification and the extra rules ---------------------------------------------

namespace {

struct ParsedValid {
  const UOp* expr;
  bool is_upper;
  Int128 c;
};

}  // namespace

const UOp* SymbolicRewriter::UOpGivenValid(const UOp* valid, const UOp* uop, bool try_simplex) {
  // parse_valid: X < c gives X <= c-1, (X < c) != True gives X >= c.
  auto parse = [&](const UOp* v, ParsedValid& out) {
    if (v->op() == Op::kCmpne && ConstIs(v->src(1), 1) && v->src(0)->op() == Op::kCmplt &&
        IsIntOrIndex(v->src(0)->src(0))) {
      out = {v->src(0)->src(0), false, VMin(v->src(0)->src(1))};
      return true;
    }
    if (v->op() == Op::kCmplt && IsIntOrIndex(v->src(0))) {
      out = {v->src(0), true, VMax(v->src(1)) - 1};
      return true;
    }
    return false;
  };
  std::vector<const UOp*> stmts;
  SplitUOp(valid, Op::kAnd, stmts);
  std::vector<std::pair<const UOp*, std::pair<std::optional<Int128>, std::optional<Int128>>>>
      bounds;
  for (const UOp* stmt : stmts) {
    ParsedValid pv;
    if (!parse(stmt, pv)) continue;
    auto it =
        std::find_if(bounds.begin(), bounds.end(), [&](auto& e) { return e.first == pv.expr; });
    if (it == bounds.end()) {
      bounds.push_back({pv.expr, {}});
      it = bounds.end() - 1;
    }
    (pv.is_upper ? it->second.second : it->second.first) = pv.c;
  }
  auto fake = [&](int i, Int128 lo, Int128 hi, const UOp* like) {
    auto clamp64 = [](Int128 v) {
      return static_cast<int64_t>(std::clamp<Int128>(v, std::numeric_limits<int64_t>::min(),
                                                     std::numeric_limits<int64_t>::max()));
    };
    return g_.Make(Op::kDefineVar, like->dtype(), {},
                   Arg::Var(absl::StrCat("fake", i), clamp64(lo), clamp64(hi)));
  };
  Map all_candidates;
  std::vector<std::pair<const UOp*, const UOp*>> all_order;
  for (size_t i = 0; i < bounds.size(); ++i) {
    const UOp* expr = bounds[i].first;
    const Int128 v0 = bounds[i].second.first.value_or(VMin(expr));
    const Int128 v1 = bounds[i].second.second.value_or(VMax(expr));
    const UOp* var = fake(static_cast<int>(i), v0, v1, expr);
    all_candidates[expr] = var;
    all_order.push_back({expr, var});
    if (!try_simplex) continue;
    std::vector<std::vector<std::pair<const UOp*, const UOp*>>> candidates = {{{expr, var}}};
    std::vector<const UOp*> parts;
    SplitUOp(expr, Op::kAdd, parts);
    if (expr->op() == Op::kAdd && v0 == 1 &&
        std::all_of(parts.begin(), parts.end(), [](const UOp* u) { return IsIrreducible(u); })) {
      std::vector<std::pair<const UOp*, const UOp*>> simplex;
      for (const UOp* xi : parts) {
        simplex.push_back({xi, fake(static_cast<int>(i), 1, VMax(xi), xi)});
      }
      candidates.push_back(simplex);
    }
    for (const auto& candidate : candidates) {
      std::vector<const UOp*> newuops;
      bool skip = false;
      for (const auto& [X, newX] : candidate) {
        const UOp* u = Substitute(uop, {{X, newX}});
        if (u == uop) skip = true;
        newuops.push_back(u);
      }
      if (skip) continue;
      for (size_t k = 0; k < newuops.size(); ++k) {
        newuops[k] =
            Simplify(Substitute(Simplify(newuops[k]), {{candidate[k].second, candidate[k].first}}));
      }
      if (std::all_of(newuops.begin(), newuops.end(),
                      [&](const UOp* u) { return u == newuops[0]; })) {
        uop = newuops[0];
      }
    }
  }
  const UOp* s_uop = Substitute(uop, all_candidates);
  if (s_uop != uop) {
    Map back;
    for (const auto& [X, newX] : all_order) back[newX] = X;
    uop = Simplify(Substitute(Simplify(s_uop), back));
  }
  return uop;
}

const UOp* SymbolicRewriter::SimplifyValid(const UOp* valid) {
  for (const UOp* u : TinyToposort({valid})) {
    if (u->op() == Op::kIndex) return nullptr;
  }
  std::vector<const UOp*> valids;
  SplitUOp(valid, Op::kAnd, valids);
  // Valids whose expression others use come first, so the others get simplified by them.
  auto priority = [&](const UOp* v) {
    int p = 0;
    const UOp* expr = nullptr;
    if (v->op() == Op::kCmpne && ConstIs(v->src(1), 1) && v->src(0)->op() == Op::kCmplt &&
        IsIntOrIndex(v->src(0)->src(0))) {
      expr = v->src(0)->src(0);
    } else if (v->op() == Op::kCmplt && IsIntOrIndex(v->src(0))) {
      expr = v->src(0);
    }
    if (expr == nullptr) return 0;
    for (const UOp* other : valids) {
      for (const UOp* u : TinyToposort({other})) {
        if (u == expr) {
          --p;
          break;
        }
      }
    }
    return p;
  };
  std::vector<std::pair<int, const UOp*>> keyed;
  for (const UOp* v : valids) keyed.push_back({priority(v), v});
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const UOp*> sorted;
  for (auto& [k, v] : keyed) sorted.push_back(v);
  std::vector<const UOp*> deduped;
  for (const UOp* v : sorted) {
    if (std::find(deduped.begin(), deduped.end(), v) == deduped.end()) deduped.push_back(v);
  }
  std::vector<const UOp*> ret;
  for (const UOp* stmt : deduped) {
    if (!ret.empty()) stmt = UOpGivenValid(Prod(ret), stmt, /*try_simplex=*/true);
    ret.push_back(stmt);
  }
  if (ret == sorted) return nullptr;
  return Prod(ret);
}

const UOp* SymbolicRewriter::ReduceMulChain(const UOp* r) {
  // Only the exact case: an integer sum (a float sum would round differently).
  if (r->arg().reduce_op != Op::kAdd || IsFloatNode(r) || !(r->dtype() == r->src(0)->dtype())) {
    return nullptr;
  }
  std::vector<const UOp*> factors, inside, outside;
  SplitUOp(r->src(0), Op::kMul, factors);
  for (const UOp* m : factors) {
    const std::vector<const UOp*> parents = TinyToposort({m});
    bool independent = true;
    for (size_t i = 1; i < r->num_src() && independent; ++i) {
      independent = std::find(parents.begin(), parents.end(), r->src(i)) == parents.end();
    }
    (independent ? outside : inside).push_back(m);
  }
  if (outside.empty()) return nullptr;
  std::vector<const UOp*> src(r->src().begin(), r->src().end());
  src[0] = inside.empty() ? ConstLike(r->src(0), 1) : PyProd(inside, r->src(0));
  return Mul(g_.Make(Op::kReduce, r->dtype(), std::move(src), r->arg()), PyProd(outside, r));
}

const UOp* SymbolicRewriter::SymRule(const UOp* n) {
  if (const UOp* r = SymbolicRule(n)) return r;
  if (!status_.ok()) return nullptr;
  const Op op = n->op();
  // pm_simplify_valid
  if (op == Op::kAnd) {
    if (const UOp* r = SimplifyValid(n)) return r;
  }
  const UOp *cond, *x, *inv;
  if (InvalidGate(n, cond, x, inv)) {
    const UOp* r = Where(cond, UOpGivenValid(cond, x, /*try_simplex=*/false), inv);
    if (r != n) return r;
  }
  // x != 0 -> (bool)x
  if (op == Op::kCmpne) {
    if (const UOp* r = Perm2(n, [&](const UOp* a, const UOp* z) -> const UOp* {
          return ConstIs(z, 0) && !a->dtype().ptr ? Cast(a, DType::Of(Scalar::kBool)) : nullptr;
        })) {
      return r;
    }
  }
  // push a cast into the branches of a where
  if (op == Op::kCast && n->src(0)->op() == Op::kWhere) {
    const UOp* w = n->src(0);
    return Where(w->src(0), Cast(w->src(1), n->dtype()), Cast(w->src(2), n->dtype()));
  }
  if (op == Op::kReduce && n->arg().reduce_op == Op::kAdd && !IsFloatNode(n)) {
    // sum(x*c) -> sum(x)*c (integers)
    if (const UOp* r =
            WithConst(n->src(0), Op::kMul, [&](const UOp* a, const UOp* c) -> const UOp* {
              std::vector<const UOp*> src(n->src().begin(), n->src().end());
              src[0] = a;
              return Mul(g_.Make(Op::kReduce, n->dtype(), std::move(src), n->arg()),
                         ConstLike(n, CInt(c)));
            })) {
      return r;
    }
  }
  if (op == Op::kReduce && n->src(0)->op() == Op::kMul) {
    if (const UOp* r = ReduceMulChain(n)) return r;
  }
  if (op == Op::kGroup && n->num_src() == 1) return n->src(0);
  if (op == Op::kMul && !IsBoolNode(n)) {
    // -(x+y) -> -x + -y
    if (const UOp* r = Perm2(n, [&](const UOp* m, const UOp* s) -> const UOp* {
          if (!ConstIs(m, -1) || s->op() != Op::kAdd) return nullptr;
          return Add(Neg(s->src(0)), Neg(s->src(1)));
        })) {
      return r;
    }
    // (x+y)*c -> x*c + y*c for INDEX x
    if (const UOp* r = Perm2(n, [&](const UOp* s, const UOp* c) -> const UOp* {
          if (s->op() != Op::kAdd || !IsCvar(c)) return nullptr;
          return Perm2(s, [&](const UOp* a, const UOp* b) -> const UOp* {
            return IsIndex(a) ? Add(Mul(a, c), Mul(b, c)) : nullptr;
          });
        })) {
      return r;
    }
  }
  return nullptr;
}

}  // namespace uopd
