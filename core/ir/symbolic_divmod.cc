// SymbolicRewriter: division and modulo folding (tinygrad's fold_divmod_general).
#include "core/ir/symbolic.h"
#include "core/ir/symbolic_internal.h"

namespace uopd {

// The rewriter's helpers are this file's vocabulary.
using namespace symbolic_internal;  // NOLINT(build/namespaces)

// fold_divmod_general's rules for a constant divisor c > 0 (remove_nested_mod,
// fold_binary_numerator, fold_divmod_congruence, gcd_with_remainder,
// nest_div_by_smallest_factor): the folded node, nullptr when the fold stops without one, or
// nullopt when the rules for any divisor come next.
std::optional<const UOp*> SymbolicRewriter::FoldDivModByConst(const UOp* d,
                                                              const DivModTerms& parts) {
  const bool is_mod = parts.is_mod;
  const UOp *x = parts.x, *y = parts.y, *x_peeled = parts.x_peeled;
  const SymBounds& xb = parts.xb;
  const Int128 konst = parts.konst;
  const std::vector<const UOp*>& uops_no_const = parts.uops_no_const;
  const Int128 c = CInt(y);
  std::vector<Int128> factors;
  std::vector<const UOp*> terms;
  // remove_nested_mod: (a%4 + b)%2 -> (a+b)%2
  if (is_mod && xb.lo >= 0) {
    std::vector<const UOp*> new_xs;
    bool changed = false;
    for (const UOp* u : uops_no_const) {
      if (u->op() == Op::kMod && Divides(u->src(1), c) != nullptr) {
        u = u->src(0);
        changed = true;
      }
      new_xs.push_back(u);
    }
    if (changed) {
      const UOp* new_x = AddC(Sum(new_xs), konst);
      if (VMin(new_x) >= 0) {
        return Alu(Op::kMod, new_x, y);
      }
    }
  }
  for (const UOp* u : uops_no_const) {
    Int128 f;
    if (!ConstFactor(u, f) || f == 0) return nullptr;
    const UOp* t = Divides(u, f);
    if (t == nullptr) return nullptr;
    factors.push_back(f);
    terms.push_back(t);
  }
  // fold_binary_numerator: one term that takes two values
  if (terms.size() == 1 && VMax(terms[0]) - VMin(terms[0]) == 1) {
    const UOp* v = terms[0];
    const Int128 a0 = factors[0] * VMin(v) + konst, a1 = factors[0] * VMax(v) + konst;
    const Int128 y1 = is_mod ? CMod(a0, c) : CDiv(a0, c);
    const Int128 y2 = is_mod ? CMod(a1, c) : CDiv(a1, c);
    return AddC(CMul(y2 - y1, AddC(v, -VMin(v))), y1);
  }
  // fold_divmod_congruence: congruent to an expression within [0, c). tinygrad also applies
  // it to numerators that may be negative, where C's truncating / and % disagree with it.
  if (xb.lo >= 0) {
    std::vector<Int128> rems;
    std::vector<const UOp*> parts;
    for (size_t i = 0; i < factors.size(); ++i) {
      const Int128 r = FloorMod(factors[i], c);
      rems.push_back(Abs(r - c) < Abs(r) ? r - c : r);
      parts.push_back(CMul(rems.back(), terms[i]));
    }
    const UOp* rem = AddC(PySum(parts, x), FloorMod(konst, c));
    if (FloorDiv(VMin(rem), c) == FloorDiv(VMax(rem), c)) {
      if (is_mod) {
        return AddC(rem, -(FloorDiv(VMin(rem), c) * c));
      }
      std::vector<const UOp*> quot;
      for (size_t i = 0; i < factors.size(); ++i) {
        quot.push_back(CMul(FloorDiv(factors[i] - rems[i], c), terms[i]));
      }
      return AddC(PySum(quot, x),
                  FloorDiv(konst - FloorMod(konst, c) + FloorDiv(VMin(rem), c) * c, c));
    }
  }
  // gcd_with_remainder: factor a common gcd out of the numerator
  if (xb.lo >= 0) {
    std::vector<const UOp*> all = uops_no_const;
    all.push_back(y);
    const UOp* gcd = GcdOf(all);
    if (gcd != nullptr && IsIntCvar(gcd) && CInt(gcd) > 1) {
      const Int128 g = CInt(gcd);
      const UOp* divided = DivideExact(x_peeled, gcd);
      if (divided == nullptr) return nullptr;
      const UOp* new_x = AddC(Simplify(divided), FloorDiv(FloorMod(konst, c), g));
      if (VMin(new_x) >= 0) {
        const UOp* ret = Alu(d->op(), new_x, ConstLike(x, FloorDiv(c, g)));
        return is_mod ? AddC(Mul(ret, gcd), FloorMod(konst, g)) : AddC(ret, FloorDiv(konst, c));
      }
    }
  }
  // nest_div_by_smallest_factor
  if (!is_mod && xb.lo >= 0) {
    Int128 div = c;
    for (size_t i = 0; i < uops_no_const.size(); ++i) {
      const Int128 f = factors[i];
      if (uops_no_const[i]->op() != Op::kConst && Abs(f) > 1 && FloorMod(c, f) == 0) {
        div = std::min(div, Abs(f));
      }
    }
    if (div < c) {
      const UOp* newxs = FoldDivMod(Alu(Op::kIdiv, x, ConstLike(x, div)));
      if (newxs != nullptr && VMin(newxs) >= 0) {
        return Alu(Op::kIdiv, newxs, ConstLike(newxs, FloorDiv(c, div)));
      }
    }
  }
  return std::nullopt;
}

// fold_divmod_general's rules for any divisor: divide_by_gcd and factor_remainder.
const UOp* SymbolicRewriter::FoldDivModGeneral(const UOp* d, const DivModTerms& parts) {
  const bool is_mod = parts.is_mod;
  const UOp *x = parts.x, *y = parts.y;
  const SymBounds &xb = parts.xb, &yb = parts.yb;
  const Int128 konst = parts.konst;
  const std::vector<const UOp*>& uops_no_const = parts.uops_no_const;
  // divide_by_gcd: x//y -> (x//gcd)//(y//gcd)
  std::vector<const UOp*> all_uops = uops_no_const;
  if (konst != 0) all_uops.push_back(ConstLike(x, konst));
  {
    std::vector<const UOp*> with_y = all_uops;
    with_y.push_back(y);
    const UOp* gcd = GcdOf(with_y);
    if (gcd == nullptr) return nullptr;
    if (!(IsIntCvar(gcd) && CInt(gcd) == 1)) {
      const UOp* a = DivideExact(x, gcd);
      const UOp* b = DivideExact(y, gcd);
      if (a == nullptr || b == nullptr) return nullptr;
      const UOp* ret = Alu(d->op(), a, b);
      return is_mod ? Mul(ret, gcd) : ret;
    }
  }
  // factor_remainder: (d*x+y)//d -> x+y//d (not for a divisor that may be 0: x//0 is 0)
  if (yb.lo <= 0 || xb.lo < 0) return nullptr;
  std::vector<const UOp*> quo, rem;
  for (const UOp* u : all_uops) {
    Int128 cf;
    if (const UOp* q = DivideExact(u, y)) {
      quo.push_back(q);
    } else if (is_mod && IsIntCvar(y) && ConstFactor(u, cf) && cf != 0 &&
               FloorMod(cf, CInt(y)) != cf) {
      const UOp* t = Divides(u, cf);
      if (t == nullptr) return nullptr;
      rem.push_back(MulC(t, FloorMod(cf, CInt(y))));
      quo.push_back(ConstLike(u, 0));
    } else {
      rem.push_back(u);
    }
  }
  if (quo.empty()) return nullptr;
  const UOp* zero = ConstLike(x, 0);
  const UOp* new_x = rem.empty() ? CAdd(0, zero) : Add(PySum(rem, x), zero);
  if (VMin(new_x) < 0) return nullptr;
  return is_mod ? Alu(Op::kMod, new_x, y) : Add(Alu(Op::kIdiv, new_x, y), PySum(quo, x));
}

const UOp* SymbolicRewriter::FoldDivMod(const UOp* d) {
  if (auto it = divmod_memo_.find(d); it != divmod_memo_.end()) return it->second;
  const UOp* result = nullptr;
  [&] {
    const bool is_mod = d->op() == Op::kMod;
    const UOp *x = d->src(0), *y = d->src(1);
    const SymBounds xb = Bounds(x), yb = Bounds(y);
    if (xb.is_float || yb.is_float) return;
    // Division by zero: tinygrad raises; the kernel stays as written.
    if (yb.lo == 0 && yb.hi == 0) return;
    // cancel_divmod: the numerator lies within one denominator interval.
    if ((yb.lo > 0 && yb.hi > 0) || (yb.lo < 0 && yb.hi < 0)) {
      const Int128 q = CDiv(xb.lo, yb.lo);
      if (q == CDiv(xb.lo, yb.hi) && q == CDiv(xb.hi, yb.lo) && q == CDiv(xb.hi, yb.hi)) {
        result = is_mod ? Sub(x, CMul(q, y)) : ConstLike(d, q);
        return;
      }
    }
    DivModTerms parts{is_mod, x, y, x, xb, yb, 0, {}};
    if (x->op() == Op::kAdd && IsIntCvar(x->src(1))) {
      parts.x_peeled = x->src(0);
      parts.konst = CInt(x->src(1));
    }
    SplitUOp(parts.x_peeled, Op::kAdd, parts.uops_no_const);
    if (IsIntCvar(y) && CInt(y) > 0) {
      if (std::optional<const UOp*> by_const = FoldDivModByConst(d, parts)) {
        result = *by_const;
        return;
      }
    }
    result = FoldDivModGeneral(d, parts);
  }();
  divmod_memo_[d] = result;
  return result;
}

}  // namespace uopd
