// SymbolicRewriter: tinygrad's `symbolic` rules, their table and the groups that fold
// constants, identities, booleans, casts and THREEFRY's packing. The groups over index
// arithmetic (terms, comparisons, WHERE, casts of sums, div/mod) are in symbolic_index_rules.cc.
#include <deque>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/ir/symbolic.h"
#include "core/ir/symbolic_internal.h"

namespace uopd {

// The rewriter's helpers are this file's vocabulary.
using namespace symbolic_internal;  // NOLINT(build/namespaces)

// ---- symbolic ------------------------------------------------------------------------------

// Constant folding (exec_alu with truncate_output=False) of integer and bool operations;
// floats are left alone (folding them here would round differently from the device).
const UOp* SymbolicRewriter::FoldConstants(const UOp* n) {
  const Op op = n->op();
  auto in_range = [](const UOp* c) {
    if (!IsIntCvar(c)) return false;
    Scalar s = S(c);
    if (s == Scalar::kIndex) return true;
    Interval r = DTypeRange(s);
    Int128 v = CInt(c);
    return v >= r.min && v <= r.max;
  };
  if (IsUnaryAlu(op) && IsCvar(n->src(0))) {
    if (op == Op::kNeg && IsIntOrIndex(n) && in_range(n->src(0))) {
      return ConstLike(n, -CInt(n->src(0)));
    }
    return nullptr;
  }
  if (IsBinaryAlu(op) && op != Op::kThreefry && IsCvar(n->src(0)) && IsCvar(n->src(1))) {
    const UOp *a = n->src(0), *b = n->src(1);
    if (!in_range(a) || !in_range(b) || !IsIntBoolIndex(a) || !IsIntBoolIndex(b)) return nullptr;
    const Int128 x = CInt(a), y = CInt(b);
    Int128 v;
    switch (op) {
      case Op::kAdd:
        v = x + y;
        break;
      case Op::kSub:
        v = x - y;
        break;
      case Op::kMul:
        v = x * y;
        break;
      case Op::kXor:
        v = x ^ y;
        break;
      case Op::kOr:
        v = x | y;
        break;
      case Op::kAnd:
        v = x & y;
        break;
      case Op::kMax:
        v = std::max(x, y);
        break;
      case Op::kCmplt:
        v = x < y;
        break;
      case Op::kCmpne:
        v = x != y;
        break;
      case Op::kCmpeq:
        v = x == y;
        break;
      case Op::kIdiv:
        if (y == 0) return nullptr;
        v = CDiv(x, y);
        break;
      case Op::kMod:
        if (y == 0) return nullptr;
        v = CMod(x, y);
        break;
      case Op::kShl:
        if (y < 0 || y >= ShiftWidth(S(n))) return nullptr;
        v = x * (Int128{1} << static_cast<int>(y));
        break;
      case Op::kShr:
        if (y < 0 || y >= ShiftWidth(S(n))) return nullptr;
        v = FloorDiv(x, Int128{1} << static_cast<int>(y));
        break;
      default:
        return nullptr;
    }
    if (v < std::numeric_limits<int64_t>::min() || v > std::numeric_limits<uint64_t>::max()) {
      return nullptr;
    }
    if (v > std::numeric_limits<int64_t>::max() && S(n) != Scalar::kUint64) return nullptr;
    return ConstLike(n, v);
  }
  if (IsTernaryAlu(op) && IsCvar(n->src(0)) && IsCvar(n->src(1)) && IsCvar(n->src(2))) {
    if (op == Op::kWhere) return Truthy(n->src(0)) ? n->src(1) : n->src(2);
    if (op == Op::kMulacc && IsIntOrIndex(n) && in_range(n->src(0)) && in_range(n->src(1)) &&
        in_range(n->src(2))) {
      Int128 v = CInt(n->src(0)) * CInt(n->src(1)) + CInt(n->src(2));
      if (v < std::numeric_limits<int64_t>::min() || v > std::numeric_limits<int64_t>::max()) {
        return nullptr;
      }
      return ConstLike(n, v);
    }
  }
  return nullptr;
}

#define UOPD_TRY(expr) \
  if ((r = (expr)) != nullptr) return r

// propagate_invalid: Invalid index arithmetic stays Invalid, the gate moves outward.
const UOp* SymbolicRewriter::RulePropagateInvalid(const UOp* n) {
  const Op op = n->op();
  const DType& dt = n->dtype();
  const bool binary = IsBinaryAlu(op);
  const UOp *cond, *x, *inv;
  const UOp* r = nullptr;
  if (op == Op::kCast && InvalidGate(n->src(0), cond, x, inv)) return Cast(x, dt);
  if (binary && !IsComparison(op)) {
    UOPD_TRY(Perm2(n, [&](const UOp* a, const UOp* y) -> const UOp* {
      const UOp *c, *v, *i;
      return InvalidGate(a, c, v, i) ? Where(c, Alu(op, v, y), i) : nullptr;
    }));
  }
  if (IsComparison(op)) {
    UOPD_TRY(Perm2(n, [&](const UOp* a, const UOp* y) -> const UOp* {
      const UOp *c, *v, *i;
      return InvalidGate(a, c, v, i) ? Alu(op, v, y) : nullptr;
    }));
  }
  if (binary && !IsComparison(op)) {
    UOPD_TRY(Perm2(n, [&](const UOp* a, const UOp* y) -> const UOp* {
      return a->IsInvalid() && IsIndex(y) ? a : nullptr;
    }));
  }

  return nullptr;
}

// symbolic_simple: self folding
const UOp* SymbolicRewriter::RuleSelfFolding(const UOp* n) {
  const Op op = n->op();
  const bool nfloat = IsFloatNode(n);
  const UOp* r = nullptr;
  if (op == Op::kAdd && !nfloat) {
    UOPD_TRY(Perm2(n, [](const UOp* a, const UOp* c) { return ConstIs(c, 0) ? a : nullptr; }));
  }
  if (op == Op::kMul) {
    UOPD_TRY(Perm2(n, [](const UOp* a, const UOp* c) { return ConstIs(c, 1) ? a : nullptr; }));
  }
  if (op == Op::kXor) {
    UOPD_TRY(Perm2(n, [](const UOp* a, const UOp* c) {
      return IsIntBoolIndex(a) && ConstIs(c, 0) ? a : nullptr;
    }));
  }
  if (op == Op::kIdiv) {
    // x//x -> 1, where x cannot be 0 (IDIV by 0 is 0 in IR v1).
    if (n->src(0) == n->src(1)) {
      const SymBounds b = Bounds(n->src(0));
      if (!b.is_float && (b.lo > 0 || b.hi < 0)) return ConstLike(n->src(0), 1);
    }
    if (ConstIs(n->src(1), 1)) return n->src(0);
    if (ConstIs(n->src(1), -1)) return Neg(n->src(0));
  }
  if (op == Op::kMod && n->src(0)->op() == Op::kMod && n->src(0)->src(1) == n->src(1)) {
    return n->src(0);
  }
  return nullptr;
}

// symbolic_simple: variations of (x%c)+(x//c)*c = x
const UOp* SymbolicRewriter::RuleDivModRecombine(const UOp* n) {
  const Op op = n->op();
  const UOp* r = nullptr;
  if (op == Op::kAdd) {
    auto mod_c = [](const UOp* u, const UOp*& xx, const UOp*& c) {
      if (u->op() != Op::kMod || !IsCvar(u->src(1))) return false;
      xx = u->src(0);
      c = u->src(1);
      return true;
    };
    auto div_c = [](const UOp* u, const UOp*& xx, const UOp*& c) {
      if (u->op() != Op::kIdiv || !IsCvar(u->src(1))) return false;
      xx = u->src(0);
      c = u->src(1);
      return true;
    };
    // x%c + (x//c)*c
    UOPD_TRY(Perm2(n, [&](const UOp* p, const UOp* q) -> const UOp* {
      const UOp *xx, *c;
      if (!mod_c(p, xx, c)) return nullptr;
      return WithConst(q, Op::kMul, [&](const UOp* d, const UOp* c2) -> const UOp* {
        const UOp *x2, *c3;
        return c2 == c && div_c(d, x2, c3) && x2 == xx && c3 == c ? xx : nullptr;
      });
    }));
    // ((x//a)%c) + (x//b)*c -> x//a when a*c == b
    UOPD_TRY(Perm2(n, [&](const UOp* p, const UOp* q) -> const UOp* {
      const UOp *inner, *c, *xx, *a;
      if (!mod_c(p, inner, c) || !div_c(inner, xx, a)) return nullptr;
      return WithConst(q, Op::kMul, [&](const UOp* d, const UOp* c2) -> const UOp* {
        const UOp *x2, *b;
        if (c2 != c || !div_c(d, x2, b) || x2 != xx) return nullptr;
        return CInt(a) * CInt(c) == CInt(b) ? Alu(Op::kIdiv, xx, a) : nullptr;
      });
    }));
    // (x//c1)*c3 + (x%c1)*c2 -> x*c2 when c1*c2 == c3
    UOPD_TRY(Perm2(n, [&](const UOp* p, const UOp* q) -> const UOp* {
      return WithConst(p, Op::kMul, [&](const UOp* d, const UOp* c3) -> const UOp* {
        const UOp *xx, *c1;
        if (!div_c(d, xx, c1)) return nullptr;
        return WithConst(q, Op::kMul, [&](const UOp* m, const UOp* c2) -> const UOp* {
          const UOp *x2, *c1b;
          if (!mod_c(m, x2, c1b) || x2 != xx || c1b != c1) return nullptr;
          return CInt(c1) * CInt(c2) == CInt(c3) ? Mul(xx, c2) : nullptr;
        });
      });
    }));
    // (y + (x//c)*c) + x%c -> y + x ; (y + x%c) + (x//c)*c -> y + x
    for (int variant = 0; variant < 2; ++variant) {
      UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* last) -> const UOp* {
        if (inner->op() != Op::kAdd) return nullptr;
        return Perm2(inner, [&](const UOp* y, const UOp* mid) -> const UOp* {
          const UOp *xx, *c;
          const UOp* mod_term = variant == 0 ? last : mid;
          const UOp* mul_term = variant == 0 ? mid : last;
          if (!mod_c(mod_term, xx, c)) return nullptr;
          return WithConst(mul_term, Op::kMul, [&](const UOp* d, const UOp* c2) -> const UOp* {
            const UOp *x2, *c3;
            return c2 == c && div_c(d, x2, c3) && x2 == xx && c3 == c ? Add(y, xx) : nullptr;
          });
        });
      }));
    }
    // (y + (x//c1)*c3) + (x%c1)*c2 -> y + x*c2 ; (y + (x%c1)*c2) + (x//c1)*c3 -> y + x*c2
    for (int variant = 0; variant < 2; ++variant) {
      UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* last) -> const UOp* {
        if (inner->op() != Op::kAdd) return nullptr;
        return Perm2(inner, [&](const UOp* y, const UOp* mid) -> const UOp* {
          const UOp* div_term = variant == 0 ? mid : last;
          const UOp* mod_term = variant == 0 ? last : mid;
          return WithConst(div_term, Op::kMul, [&](const UOp* d, const UOp* c3) -> const UOp* {
            const UOp *xx, *c1;
            if (!div_c(d, xx, c1)) return nullptr;
            return WithConst(mod_term, Op::kMul, [&](const UOp* m, const UOp* c2) -> const UOp* {
              const UOp *x2, *c1b;
              if (!mod_c(m, x2, c1b) || x2 != xx || c1b != c1) return nullptr;
              return CInt(c1) * CInt(c2) == CInt(c3) ? Add(y, Mul(xx, c2)) : nullptr;
            });
          });
        });
      }));
    }
  }
  return nullptr;
}

// symbolic_simple: boolean identities
const UOp* SymbolicRewriter::RuleBoolIdentities(const UOp* n) {
  const Op op = n->op();
  const bool binary = IsBinaryAlu(op);
  const UOp* r = nullptr;
  if ((op == Op::kAnd || op == Op::kOr) && binary) {
    UOPD_TRY(Perm2(n, [&](const UOp* a, const UOp* c) -> const UOp* {
      if (!IsBoolNode(a) || !IsCvar(c)) return nullptr;
      if (op == Op::kAnd) return Truthy(c) ? a : c;
      return Truthy(c) ? c : a;
    }));
  }
  if ((op == Op::kOr || op == Op::kAnd || op == Op::kMax) && n->src(0) == n->src(1)) {
    return n->src(0);
  }
  if (op == Op::kCmpne) {
    // (not (not x)) -> x for bool x
    auto is_true = [](const UOp* c) { return IsCvar(c) && IsBoolNode(c) && Truthy(c); };
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* t) -> const UOp* {
      if (!is_true(t) || inner->op() != Op::kCmpne) return nullptr;
      return Perm2(inner, [&](const UOp* xx, const UOp* t2) -> const UOp* {
        return IsBoolNode(xx) && is_true(t2) ? xx : nullptr;
      });
    }));
  }
  if (op == Op::kWhere && IsBoolNode(n->src(0)) && IsCvar(n->src(1)) && IsCvar(n->src(2)) &&
      IsBoolNode(n->src(1)) && IsBoolNode(n->src(2))) {
    if (Truthy(n->src(1)) && !Truthy(n->src(2))) return n->src(0);
    if (!Truthy(n->src(1)) && Truthy(n->src(2))) {
      return Alu(Op::kCmpne, n->src(0), ConstLike(n->src(0), 1));
    }
  }
  if (op == Op::kTrunc && IsIntBoolIndex(n->src(0))) return n->src(0);
  return nullptr;
}

// zero folding
const UOp* SymbolicRewriter::RuleZeroFolding(const UOp* n) {
  const Op op = n->op();
  if (op == Op::kCmplt && n->src(0) == n->src(1)) return ConstLike(n, 0);
  if (op == Op::kMod && n->src(0) == n->src(1)) return ConstLike(n->src(0), 0);
  if (op == Op::kXor && n->src(0) == n->src(1)) return ConstLike(n->src(0), 0);
  if (op == Op::kCmpne && n->src(0) == n->src(1) && IsIntBoolIndex(n->src(0))) {
    return ConstLike(n, 0);
  }
  return nullptr;
}

// constant folding
const UOp* SymbolicRewriter::RuleConstantFolding(const UOp* n) {
  const Op op = n->op();
  const bool nfloat = IsFloatNode(n);
  const UOp* r = nullptr;
  UOPD_TRY(FoldConstants(n));
  // bool MUL is AND, ADD/MAX is OR
  if ((op == Op::kMul || op == Op::kAdd || op == Op::kMax) && IsBoolNode(n->src(0)) &&
      IsBoolNode(n->src(1))) {
    return Alu(op == Op::kMul ? Op::kAnd : Op::kOr, n->src(0), n->src(1));
  }
  // x*0 -> 0 (integers: for floats, 0*inf is nan)
  if (op == Op::kMul && !nfloat) {
    UOPD_TRY(Perm2(
        n, [&](const UOp* a, const UOp* c) { return ConstIs(c, 0) ? ConstLike(a, 0) : nullptr; }));
  }
  return nullptr;
}

// cast/bitcast
const UOp* SymbolicRewriter::RuleCastBitcast(const UOp* n) {
  const Op op = n->op();
  const DType& dt = n->dtype();
  if (op == Op::kCast && IsIntCvar(n->src(0)) && !dt.ptr) {
    const UOp* c = n->src(0);
    // The value the source constant stands for (a uint32 -7 is 4294967289).
    const Int128 v = S(c) == Scalar::kIndex ? CInt(c) : WrapToDType(CInt(c), S(c));
    if (IsIntBoolIndex(n)) return ConstLike(n, S(n) == Scalar::kBool ? Int128(v != 0) : v);
    if ((dt.scalar == Scalar::kFloat32 || dt.scalar == Scalar::kFloat64) &&
        Abs(v) <= (Int128{1} << 24)) {
      return ConstLike(n, v);
    }
  }
  if (op == Op::kCast && IsCvar(n->src(0)) && n->src(0)->arg().kind == ArgKind::kF64 && !dt.ptr &&
      FloatConstValue(n->src(0)).has_value()) {
    // A float constant to bool or (within range, truncated) to an integer is exact.
    const double f = *FloatConstValue(n->src(0));
    if (S(n) == Scalar::kBool) return ConstLike(n, f != 0 || std::isnan(f));
    if (IsIntOrIndex(n) && std::isfinite(f) && std::abs(f) < 9e15) {
      const Int128 v = static_cast<Int128>(std::trunc(f));
      const Interval range = RangeOf(S(n));
      if (v >= range.min && v <= range.max) return ConstLike(n, v);
    }
  }
  if ((op == Op::kCast || op == Op::kBitcast) && dt == n->src(0)->dtype()) return n->src(0);
  if (op == Op::kCast && n->src(0)->op() == Op::kCast) {
    const UOp* xx = n->src(0)->src(0);
    if (xx->dtype() == dt && CanLosslessCast(dt.scalar, n->src(0)->dtype().scalar)) return xx;
  }
  return nullptr;
}

// threefry: 64-bit packing of two 32-bit halves
const UOp* SymbolicRewriter::RuleThreefry(const UOp* n) {
  const Op op = n->op();
  const DType& dt = n->dtype();
  const UOp* r = nullptr;
  {
    const DType u64 = DType::Of(Scalar::kUint64), u32 = DType::Of(Scalar::kUint32);
    auto const_u64 = [&](const UOp* c, Int128 v) {
      return IsIntCvar(c) && c->dtype() == u64 && CInt(c) == v;
    };
    auto cast_u32_to_u64 = [&](const UOp* c) -> const UOp* {
      return c->op() == Op::kCast && c->dtype() == u64 && c->src(0)->dtype() == u32 ? c->src(0)
                                                                                    : nullptr;
    };
    // (hi * 2^32 | lo) or (hi << 32 | lo): binds hi and lo.
    auto packed = [&](const UOp* o, const UOp*& hi, const UOp*& lo) -> bool {
      if (o->op() != Op::kOr) return false;
      for (int perm = 0; perm < 2; ++perm) {
        const UOp *a = o->src(perm), *b = o->src(1 - perm);
        const UOp* l = cast_u32_to_u64(b);
        if (l == nullptr) continue;
        if (a->op() == Op::kMul) {
          for (int p2 = 0; p2 < 2; ++p2) {
            if (a->src(p2)->dtype() == u64 && const_u64(a->src(1 - p2), Int128{1} << 32)) {
              hi = a->src(p2);
              lo = l;
              return true;
            }
          }
        }
        if (a->op() == Op::kShl && a->src(0)->dtype() == u64 && const_u64(a->src(1), 32)) {
          hi = a->src(0);
          lo = l;
          return true;
        }
      }
      return false;
    };
    const UOp *hi, *lo;
    if (op == Op::kCast && dt == u32 && n->src(0)->op() == Op::kAnd) {
      UOPD_TRY(Perm2(n->src(0), [&](const UOp* a, const UOp* c) -> const UOp* {
        return a->dtype() == u64 && const_u64(c, 0xFFFFFFFF) ? Cast(a, u32) : nullptr;
      }));
    }
    if (op == Op::kCast && dt == u32 && packed(n->src(0), hi, lo)) return lo;
    // The high half comes back only if it had no bits the shift dropped.
    auto narrow = [&](const UOp* h) {
      return (h->op() == Op::kCast && IsUnsigned(S(h->src(0))) && IntBits(S(h->src(0))) <= 32) ||
             VMax(h) < (Int128{1} << 32);
    };
    if (op == Op::kIdiv && const_u64(n->src(1), Int128{1} << 32) && packed(n->src(0), hi, lo) &&
        n->src(0)->src(0)->op() != Op::kShl && n->src(0)->src(1)->op() != Op::kShl && narrow(hi)) {
      return hi;
    }
    if (op == Op::kShr && const_u64(n->src(1), 32) && packed(n->src(0), hi, lo) &&
        (n->src(0)->src(0)->op() == Op::kShl || n->src(0)->src(1)->op() == Op::kShl) &&
        narrow(hi)) {
      return hi;
    }
  }
  return nullptr;
}

// simple where folding
const UOp* SymbolicRewriter::RuleSimpleWhereFolding(const UOp* n) {
  const Op op = n->op();
  if (op == Op::kWhere) {
    if (n->src(1) == n->src(2)) return n->src(1);
    if (IsCvar(n->src(0))) return Truthy(n->src(0)) ? n->src(1) : n->src(2);
    if (n->src(1)->op() == Op::kWhere && n->src(1)->src(2) == n->src(2)) {
      return Where(Alu(Op::kAnd, n->src(0), n->src(1)->src(0)), n->src(1)->src(1), n->src(2));
    }
  }

  return nullptr;
}

// commutative: INDEX operands in tinygrad's order (UOp.tuplize)
const UOp* SymbolicRewriter::RuleCommutative(const UOp* n) {
  const Op op = n->op();
  const DType& dt = n->dtype();
  if (IsCommutative(op) && IsIndex(n) && TupLess(n->src(1), n->src(0))) {
    return g_.Make(op, dt, {n->src(1), n->src(0)}, n->arg());
  }

  return nullptr;
}

// symbolic: boolean algebra
const UOp* SymbolicRewriter::RuleBooleanAlgebra(const UOp* n) {
  const Op op = n->op();
  const UOp* r = nullptr;
  if (op == Op::kOr) {
    UOPD_TRY(Perm2(n, [&](const UOp* a, const UOp* b) -> const UOp* {
      if (!IsBoolNode(a) || b->op() != Op::kCmpne) return nullptr;
      return Perm2(b, [&](const UOp* a2, const UOp* t) -> const UOp* {
        return a2 == a && ConstIs(t, 1) ? ConstLike(a, 1) : nullptr;
      });
    }));
  }
  return nullptr;
}

#undef UOPD_TRY

const UOp* SymbolicRewriter::SymbolicRule(const UOp* n) {
  if (!Step()) return nullptr;
  // tinygrad's `symbolic` PatternMatcher, its rules in its order: the first that rewrites wins.
  static constexpr const UOp* (SymbolicRewriter::*kRules[])(const UOp*) = {
      &SymbolicRewriter::RulePropagateInvalid,
      &SymbolicRewriter::RuleSelfFolding,
      &SymbolicRewriter::RuleDivModRecombine,
      &SymbolicRewriter::RuleBoolIdentities,
      &SymbolicRewriter::RuleZeroFolding,
      &SymbolicRewriter::RuleConstantFolding,
      &SymbolicRewriter::RuleCastBitcast,
      &SymbolicRewriter::RuleThreefry,
      &SymbolicRewriter::RuleSimpleWhereFolding,
      &SymbolicRewriter::RuleCommutative,
      &SymbolicRewriter::RuleBooleanAlgebra,
      &SymbolicRewriter::RuleCombineTerms,
      &SymbolicRewriter::RuleWhereFolding,
      &SymbolicRewriter::RuleTwoStageAluFolding,
      &SymbolicRewriter::RuleLt,
      &SymbolicRewriter::RuleConstsLast,
      &SymbolicRewriter::RuleGenericLtFolding,
      &SymbolicRewriter::RuleCastFolding,
      &SymbolicRewriter::RuleDivModFast,
      &SymbolicRewriter::RuleDivModSlow,
  };
  for (auto rule : kRules) {
    if (const UOp* r = (this->*rule)(n)) return r;
  }
  return nullptr;
}

}  // namespace uopd
