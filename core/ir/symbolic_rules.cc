// SymbolicRewriter: tinygrad's `symbolic` rules: constant folding, the rule table, and the
// comparisons it folds.
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

// tinygrad's fold_divmod_general (uop/divandmod.py) for INDEX IDIV/MOD.

}  // namespace uopd
