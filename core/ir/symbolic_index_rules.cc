// SymbolicRewriter: the groups of tinygrad's `symbolic` rules over index arithmetic: combining
// terms, WHERE, two-stage folds, comparisons, constants last, cast folding and div/mod (their
// table is in symbolic_rules.cc).
#include "absl/strings/str_cat.h"
#include "core/ir/symbolic.h"
#include "core/ir/symbolic_internal.h"

namespace uopd {

// The rewriter's helpers are this file's vocabulary.
using namespace symbolic_internal;  // NOLINT(build/namespaces)

#define UOPD_TRY(expr) \
  if ((r = (expr)) != nullptr) return r

// combine terms (integers: for floats these change the rounding)
const UOp* SymbolicRewriter::RuleCombineTerms(const UOp* n) {
  const Op op = n->op();
  const bool nfloat = IsFloatNode(n);
  const UOp* r = nullptr;
  if (op == Op::kAdd && !nfloat) {
    // x*c0 + x*c1 -> x*(c0+c1)
    UOPD_TRY(Perm2(n, [&](const UOp* p, const UOp* q) -> const UOp* {
      return WithConst(p, Op::kMul, [&](const UOp* xx, const UOp* c0) -> const UOp* {
        return WithConst(q, Op::kMul, [&](const UOp* x2, const UOp* c1) -> const UOp* {
          return x2 == xx ? Mul(xx, Add(c0, c1)) : nullptr;
        });
      });
    }));
    // (y + x*c0) + x*c1 -> y + x*(c0+c1)
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* q) -> const UOp* {
      if (inner->op() != Op::kAdd) return nullptr;
      return Perm2(inner, [&](const UOp* y, const UOp* p) -> const UOp* {
        return WithConst(p, Op::kMul, [&](const UOp* xx, const UOp* c0) -> const UOp* {
          return WithConst(q, Op::kMul, [&](const UOp* x2, const UOp* c1) -> const UOp* {
            return x2 == xx ? Add(y, Mul(xx, Add(c0, c1))) : nullptr;
          });
        });
      });
    }));
    // x + x*c -> x*(c+1)
    UOPD_TRY(Perm2(n, [&](const UOp* xx, const UOp* q) -> const UOp* {
      return WithConst(q, Op::kMul, [&](const UOp* x2, const UOp* c) -> const UOp* {
        return x2 == xx ? Mul(xx, AddC(c, 1)) : nullptr;
      });
    }));
    // (y + x) + x*c -> y + x*(c+1)
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* q) -> const UOp* {
      if (inner->op() != Op::kAdd) return nullptr;
      return Perm2(inner, [&](const UOp* y, const UOp* xx) -> const UOp* {
        return WithConst(q, Op::kMul, [&](const UOp* x2, const UOp* c) -> const UOp* {
          return x2 == xx ? Add(y, Mul(xx, AddC(c, 1))) : nullptr;
        });
      });
    }));
    // (y + x*c) + x -> y + x*(c+1)
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* xx) -> const UOp* {
      if (inner->op() != Op::kAdd) return nullptr;
      return Perm2(inner, [&](const UOp* y, const UOp* p) -> const UOp* {
        return WithConst(p, Op::kMul, [&](const UOp* x2, const UOp* c) -> const UOp* {
          return x2 == xx ? Add(y, Mul(xx, AddC(c, 1))) : nullptr;
        });
      });
    }));
  }
  if (op == Op::kAdd && n->src(0) == n->src(1)) return MulC(n->src(0), 2);
  if (op == Op::kAdd && !nfloat) {
    // (y + x) + x -> y + x*2
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* xx) -> const UOp* {
      if (inner->op() != Op::kAdd) return nullptr;
      return Perm2(inner, [&](const UOp* y, const UOp* x2) -> const UOp* {
        return x2 == xx ? Add(y, MulC(xx, 2)) : nullptr;
      });
    }));
  }
  if (op == Op::kMul && !IsBoolNode(n)) {
    // -(x+c) -> -x + -c
    UOPD_TRY(Perm2(n, [&](const UOp* m, const UOp* s) -> const UOp* {
      if (!ConstIs(m, -1) || s->op() != Op::kAdd) return nullptr;
      return Perm2(s, [&](const UOp* xx, const UOp* c) -> const UOp* {
        return IsCvar(c) ? Add(Neg(xx), Neg(c)) : nullptr;
      });
    }));
    // y*(x+c) -> y*x + y*c for INDEX x
    UOPD_TRY(Perm2(n, [&](const UOp* y, const UOp* s) -> const UOp* {
      if (!IsCvar(y) || s->op() != Op::kAdd) return nullptr;
      return Perm2(s, [&](const UOp* xx, const UOp* c) -> const UOp* {
        return IsIndex(xx) && IsCvar(c) ? Add(Mul(y, xx), Mul(y, c)) : nullptr;
      });
    }));
  }
  return nullptr;
}

// where folding
const UOp* SymbolicRewriter::RuleWhereFolding(const UOp* n) {
  const Op op = n->op();
  const DType& dt = n->dtype();
  const bool binary = IsBinaryAlu(op);
  const bool nfloat = IsFloatNode(n);
  const UOp* r = nullptr;
  if (op == Op::kWhere && n->src(0)->op() == Op::kCmpne && !n->src(2)->IsInvalid()) {
    UOPD_TRY(Perm2(n->src(0), [&](const UOp* c, const UOp* t) -> const UOp* {
      return IsBoolNode(c) && IsCvar(t) && IsBoolNode(t) && Truthy(t)
                 ? Where(c, n->src(2), n->src(1))
                 : nullptr;
    }));
  }
  if (binary && n->src(0)->op() == Op::kWhere && n->src(1)->op() == Op::kWhere &&
      n->src(0)->src(0) == n->src(1)->src(0)) {
    const UOp *a = n->src(0), *b = n->src(1);
    if ((a->src(1)->op() == Op::kConst && b->src(1)->op() == Op::kConst) ||
        (a->src(2)->op() == Op::kConst && b->src(2)->op() == Op::kConst)) {
      return Where(a->src(0), Alu(op, a->src(1), b->src(1)), Alu(op, a->src(2), b->src(2)));
    }
  }
  if (op == Op::kAdd && !nfloat) {
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* w2) -> const UOp* {
      if (inner->op() != Op::kAdd || w2->op() != Op::kWhere) return nullptr;
      return Perm2(inner, [&](const UOp* y, const UOp* w1) -> const UOp* {
        if (w1->op() != Op::kWhere || w1->src(0) != w2->src(0)) return nullptr;
        if (!((w1->src(1)->op() == Op::kConst && w2->src(1)->op() == Op::kConst) ||
              (w1->src(2)->op() == Op::kConst && w2->src(2)->op() == Op::kConst))) {
          return nullptr;
        }
        return Add(y, Where(w1->src(0), Add(w1->src(1), w2->src(1)), Add(w1->src(2), w2->src(2))));
      });
    }));
  }
  // ALU/variable with min == max -> CONST
  if (IsAlu(op) || op == Op::kDefineVar || op == Op::kSpecial) {
    SymBounds b = Bounds(n);
    if (!b.is_float && !nfloat && b.lo == b.hi && !dt.ptr) return ConstLike(n, b.lo);
  }
  if (op == Op::kRange && n->src(0)->op() == Op::kConst) {
    SymBounds b = Bounds(n);
    if (b.lo == b.hi) return ConstLike(n, b.lo);
  }
  // max folding
  if (op == Op::kMax && !nfloat) {
    UOPD_TRY(Perm2(n, [&](const UOp* a, const UOp* b) -> const UOp* {
      if (VMin(a) >= VMax(b)) return a;
      if (VMax(a) <= VMin(b)) return b;
      return nullptr;
    }));
  }
  return nullptr;
}

// two stage ALU folding: (x op c1) op c2 -> x op (c1 op c2)
const UOp* SymbolicRewriter::RuleTwoStageAluFolding(const UOp* n) {
  const Op op = n->op();
  const bool nfloat = IsFloatNode(n);
  const UOp* r = nullptr;
  if ((op == Op::kAdd || op == Op::kMul || op == Op::kAnd || op == Op::kOr || op == Op::kMax) &&
      !nfloat) {
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* c2) -> const UOp* {
      if (!IsCvar(c2)) return nullptr;
      return WithConst(inner, op, [&](const UOp* xx, const UOp* c1) -> const UOp* {
        return Alu(op, xx, Alu(op, c1, c2));
      });
    }));
  }
  if (op == Op::kCmplt && IsIndex(n->src(0)) && IsCvar(n->src(1))) {
    // c0 + x < c1 -> x < c1 - c0
    UOPD_TRY(WithConst(n->src(0), Op::kAdd, [&](const UOp* xx, const UOp* c0) -> const UOp* {
      return Alu(Op::kCmplt, xx, Sub(n->src(1), c0));
    }));
  }
  if (op == Op::kIdiv && IsIntOrIndex(n) && IsCvar(n->src(1)) && n->src(0)->op() == Op::kIdiv &&
      IsCvar(n->src(0)->src(1))) {
    // (x//c1)//c2 -> x//(c1*c2)
    const Int128 prod = CInt(n->src(0)->src(1)) * CInt(n->src(1));
    Interval range = RangeOf(S(n));
    if (prod >= range.min && prod <= range.max) {
      return Alu(Op::kIdiv, n->src(0)->src(0), Mul(n->src(0)->src(1), n->src(1)));
    }
  }
  return nullptr;
}

// lt
const UOp* SymbolicRewriter::RuleLt(const UOp* n) {
  const Op op = n->op();
  const UOp* r = nullptr;
  if (op == Op::kCmplt && IsIntCvar(n->src(1))) {
    const Int128 c1 = CInt(n->src(1));
    UOPD_TRY(WithConst(n->src(0), Op::kMul, [&](const UOp* xx, const UOp* c0n) -> const UOp* {
      if (!IsIndex(xx) || !IsIntCvar(c0n)) return nullptr;
      const Int128 c0 = CInt(c0n);
      if (c0 > 0 && c1 > 0) return Alu(Op::kCmplt, xx, ConstLike(xx, -FloorDiv(-c1, c0)));
      return nullptr;
    }));
    UOPD_TRY(WithConst(n->src(0), Op::kMul, [&](const UOp* xx, const UOp* c0n) -> const UOp* {
      if (!IsIndex(xx) || !IsIntCvar(c0n)) return nullptr;
      const Int128 c0 = CInt(c0n);
      if (c0 < 0 && c0 != -1 && c1 <= 0) {
        return Alu(Op::kCmplt, Neg(xx), ConstLike(xx, -FloorDiv(-c1, -c0)));
      }
      return nullptr;
    }));
    const UOp* lhs = n->src(0);
    if (lhs->op() == Op::kIdiv && IsIndex(lhs->src(0)) && IsIntCvar(lhs->src(1))) {
      const Int128 d = CInt(lhs->src(1));
      if (d > 0) {
        return Alu(Op::kCmplt, lhs->src(0),
                   ConstLike(lhs->src(0), c1 > 0 ? c1 * d : c1 * d - (d - 1)));
      }
    }
  }
  return nullptr;
}

// move add/mul consts to the end (integers)
const UOp* SymbolicRewriter::RuleConstsLast(const UOp* n) {
  const Op op = n->op();
  const bool nfloat = IsFloatNode(n);
  const UOp* r = nullptr;
  if ((op == Op::kAdd || op == Op::kMul) && !nfloat) {
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* y) -> const UOp* {
      return WithConst(inner, op, [&](const UOp* xx, const UOp* c1) -> const UOp* {
        return Alu(op, Alu(op, xx, y), c1);
      });
    }));
  }
  return nullptr;
}

// generic lt folding
const UOp* SymbolicRewriter::RuleGenericLtFolding(const UOp* n) {
  const Op op = n->op();
  const UOp* r = nullptr;
  if (op == Op::kCmplt && IsIndex(n->src(0)) && IsIntCvar(n->src(1)) && CInt(n->src(1)) > 0) {
    UOPD_TRY(LtFolding(n->src(0), CInt(n->src(1))));
  }
  if (op == Op::kCmplt && n->src(0)->op() == Op::kMul && n->src(1)->op() == Op::kMul) {
    // x*-1 < y*-1 -> y < x
    UOPD_TRY(WithConst(n->src(0), Op::kMul, [&](const UOp* xx, const UOp* m1) -> const UOp* {
      if (!IsIndex(xx) || !ConstIs(m1, -1) || !IsIndex(m1)) return nullptr;
      return WithConst(n->src(1), Op::kMul, [&](const UOp* y, const UOp* m2) -> const UOp* {
        return ConstIs(m2, -1) ? Alu(Op::kCmplt, y, xx) : nullptr;
      });
    }));
  }
  if (op == Op::kCmpne) {
    // canonicalize a simplex: (x < 1) != True
    UOPD_TRY(Perm2(n, [&](const UOp* lt, const UOp* t) -> const UOp* {
      if (lt->op() != Op::kCmplt || !IsIndex(lt->src(0)) || !ConstIs(lt->src(1), 1) ||
          !IsIndex(lt->src(1)) || !ConstIs(t, 1) || !IsBoolNode(t)) {
        return nullptr;
      }
      const UOp* newx = CanonicalizeSimplex(lt->src(0));
      if (newx == nullptr) return nullptr;
      return Alu(Op::kCmpne, Alu(Op::kCmplt, newx, ConstLike(newx, 1)), t);
    }));
  }
  // a range mod (or div) its own size
  if (op == Op::kMod && n->src(0)->op() == Op::kRange && n->src(0)->src(0) == n->src(1)) {
    return n->src(0);
  }
  if (op == Op::kIdiv && n->src(0)->op() == Op::kRange && n->src(0)->src(0) == n->src(1)) {
    return ConstLike(n->src(0), 0);
  }
  return nullptr;
}

// cast folding
const UOp* SymbolicRewriter::RuleCastFolding(const UOp* n) {
  const Op op = n->op();
  const DType& dt = n->dtype();
  const bool binary = IsBinaryAlu(op);
  const UOp* r = nullptr;
  if (op == Op::kCast && n->src(0)->op() == Op::kCast) {
    const UOp* a = n->src(0);
    const UOp* xx = a->src(0);
    // Through a float, a value the target cannot hold converts differently (saturating) than
    // it does from an integer (wrapping): only values it holds go straight.
    const bool via_float_to_int = IsFloat(S(a)) && IsInt(dt.scalar);
    const SymBounds xb = Bounds(xx);
    const Interval target = DTypeRange(dt.scalar);
    if (CanLosslessCast(xx->dtype().scalar, a->dtype().scalar) &&
        (!via_float_to_int || (!xb.is_float && xb.lo >= target.min && xb.hi <= target.max))) {
      return Cast(xx, dt);
    }
    if (IsIntOrIndex(xx) && IsIntOrIndex(a)) {
      Interval r = RangeOf(S(a));
      SymBounds b = Bounds(xx);
      if (r.min <= b.lo && b.hi <= r.max) return Cast(xx, dt);
    }
  }
  // int64 math that fits in int32 is done in int32
  if (binary && n->src(0)->dtype() == DType::Of(Scalar::kInt64) &&
      n->src(1)->dtype() == DType::Of(Scalar::kInt64)) {
    Interval i32 = DTypeRange(Scalar::kInt32);
    auto fits = [&](const UOp* u) {
      SymBounds b = Bounds(u);
      return !b.is_float && b.lo >= i32.min && b.hi <= i32.max;
    };
    // A shift by 32 or more wraps differently in 32 bits.
    const bool shift_ok =
        (op != Op::kShl && op != Op::kShr) || (VMin(n->src(1)) >= 0 && VMax(n->src(1)) < 32);
    if (shift_ok && fits(n) && fits(n->src(0)) && fits(n->src(1))) {
      const DType i32t = DType::Of(Scalar::kInt32);
      return Cast(Alu(op, Cast(n->src(0), i32t), Cast(n->src(1), i32t)), dt);
    }
  }
  if (op == Op::kCast && IsSignedInt(dt.scalar) && !dt.ptr) {
    UOPD_TRY(WithConst(n->src(0), Op::kAdd, [&](const UOp* xx, const UOp* c) -> const UOp* {
      return IsIndex(xx) ? Add(Cast(xx, dt), Cast(c, dt)) : nullptr;
    }));
  }
  // AFTER only orders after side effects
  if (op == Op::kAfter) {
    if (n->num_src() == 1) return n->src(0);
    std::vector<const UOp*> src = {n->src(0)};
    for (size_t i = 1; i < n->num_src(); ++i) {
      const UOp* y = n->src(i);
      if (y->op() == Op::kRange || y->op() == Op::kStore || y->op() == Op::kBarrier ||
          y->op() == Op::kEnd || y->op() == Op::kUnroll) {
        src.push_back(y);
      } else {
        src.insert(src.end(), y->src().begin(), y->src().end());
      }
    }
    if (!std::equal(src.begin(), src.end(), n->src().begin(), n->src().end())) {
      return g_.Make(op, dt, std::move(src), n->arg());
    }
  }

  return nullptr;
}

// div_and_mod_symbolic: fast rules
const UOp* SymbolicRewriter::RuleDivModFast(const UOp* n) {
  const Op op = n->op();
  const UOp* r = nullptr;
  if (op == Op::kIdiv && IsIndex(n) && IsCvar(n->src(1)) && n->src(0)->op() == Op::kAdd) {
    // (x//c + a)//d -> (x + a*c)//(c*d)
    const UOp* d = n->src(1);
    UOPD_TRY(WithConst(n->src(0), Op::kAdd, [&](const UOp* q, const UOp* a) -> const UOp* {
      if (q->op() != Op::kIdiv || !IsCvar(q->src(1))) return nullptr;
      const UOp *xx = q->src(0), *c = q->src(1);
      if (!(VMin(c) > 0 && VMin(d) > 0)) return nullptr;
      if ((VMin(xx) >= 0 && VMin(a) >= 0) || (VMax(xx) <= 0 && VMax(a) <= 0)) {
        return Alu(Op::kIdiv, Add(xx, Mul(a, c)), Mul(c, d));
      }
      return nullptr;
    }));
  }
  if (op == Op::kIdiv && IsIndex(n->src(0))) {
    const UOp *xx = n->src(0), *d = n->src(1);
    if (VMax(d) < 0) return Neg(Alu(Op::kIdiv, xx, Neg(d)));
    if (VMax(xx) <= 0) return Neg(Alu(Op::kIdiv, Neg(xx), d));
    if (IsIntCvar(d) && xx->op() == Op::kAdd) {
      const Int128 dv = CInt(d);
      UOPD_TRY(WithConst(xx, Op::kAdd, [&](const UOp* a, const UOp* c) -> const UOp* {
        if (!IsIndex(a) || !IsIntCvar(c) || dv <= 0) return nullptr;
        const Int128 cv = CInt(c);
        if (FloorMod(cv, dv) != cv && VMin(a) >= 0 && VMin(xx) >= 0) {
          return AddC(Alu(Op::kIdiv, AddC(a, FloorMod(cv, dv)), d), FloorDiv(cv, dv));
        }
        return nullptr;
      }));
      UOPD_TRY(WithConst(xx, Op::kAdd, [&](const UOp* a, const UOp* c) -> const UOp* {
        if (!IsIndex(a) || !IsIntCvar(c) || dv <= 0) return nullptr;
        const Int128 cv = CInt(c);
        if (VMax(a) <= 0 && VMin(xx) >= 0) {
          const UOp* inner = AddC(CAdd(FloorMod(cv, dv), a), -(dv - 1));
          return AddC(Neg(Alu(Op::kIdiv, Neg(inner), d)), FloorDiv(cv, dv));
        }
        return nullptr;
      }));
    }
  }
  return nullptr;
}

// slow rules
const UOp* SymbolicRewriter::RuleDivModSlow(const UOp* n) {
  const Op op = n->op();
  const UOp* r = nullptr;
  if ((op == Op::kIdiv || op == Op::kMod) && IsIndex(n)) UOPD_TRY(FoldDivMod(n));
  if (op == Op::kMod && IsIndex(n->src(0))) {
    if (VMax(n->src(0)) <= 0) return Neg(Alu(Op::kMod, Neg(n->src(0)), n->src(1)));
    if (VMax(n->src(1)) < 0) return Alu(Op::kMod, n->src(0), Neg(n->src(1)));
  }
  return nullptr;
}

#undef UOPD_TRY

const UOp* SymbolicRewriter::LtFolding(const UOp* x, Int128 c) {
  std::vector<const UOp*> terms, p, np;
  SplitUOp(x, Op::kAdd, terms);
  Int128 d = c;
  for (const UOp* u : terms) {
    Int128 f;
    if (!ConstFactor(u, f)) return nullptr;
    if (f == 1) {
      p.push_back(u);
    } else {
      np.push_back(u);
      d = Gcd(d, f);
    }
  }
  if (np.empty() || d <= 1) return nullptr;
  Int128 lo = 0, hi = 0;
  for (const UOp* u : p) {
    lo = SaturatingAdd(lo, VMin(u));
    hi = SaturatingAdd(hi, VMax(u));
  }
  if (!(0 <= lo && hi < d)) return nullptr;
  const UOp* divided = Divides(Sum(np), d);
  if (divided == nullptr) return nullptr;
  return Alu(Op::kCmplt, divided, ConstLike(divided, FloorDiv(c, d)));
}

const UOp* SymbolicRewriter::CanonicalizeSimplex(const UOp* x) {
  std::vector<const UOp*> terms, ret;
  SplitUOp(x, Op::kAdd, terms);
  bool changed = false;
  for (const UOp* u : terms) {
    if (u->op() == Op::kMul && IsIntCvar(u->src(1)) && CInt(u->src(1)) > 0) {
      changed = true;
      u = u->src(0);
    }
    if (!(IsIrreducible(u) && VMin(u) >= 0)) return nullptr;
    ret.push_back(u);
  }
  return changed ? Sum(ret) : nullptr;
}

}  // namespace uopd
