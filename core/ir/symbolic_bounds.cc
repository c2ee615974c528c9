// SymbolicRewriter: bounds of index expressions (tinygrad's vmin/vmax) and the ranges a node
// depends on.
#include <optional>

#include "core/ir/symbolic.h"
#include "core/ir/symbolic_internal.h"

namespace uopd {

// The rewriter's helpers are this file's vocabulary.
using namespace symbolic_internal;  // NOLINT(build/namespaces)

// ---- bounds ----------------------------------------------------------------------------------

SymBounds SymbolicRewriter::Bounds(const UOp* n) {
  if (auto it = bounds_.find(n); it != bounds_.end()) return it->second;
  // Sources first, without recursion, stopping at nodes already known.
  for (const UOp* u : TinyToposort({n}, [&](const UOp* m) { return bounds_.contains(m); })) {
    bounds_[u] = ComputeBounds(u);
  }
  return bounds_.at(n);
}

namespace {

// Everything a node of scalar `s` can hold (pointers and void: anything).
SymBounds WholeBounds(Scalar s, bool ptr) {
  SymBounds b;
  if (IsFloat(s)) {
    b.is_float = true;
    b.flo = -std::numeric_limits<double>::infinity();
    b.fhi = std::numeric_limits<double>::infinity();
  } else if (s == Scalar::kVoid || ptr) {
    b.lo = -kSaturatedMax;
    b.hi = kSaturatedMax;
  } else {
    Interval r = RangeOf(s);
    b.lo = r.min;
    b.hi = r.max;
  }
  return b;
}

// [lo, hi] for a node of scalar `s`, or its whole range where a wrapping integer dtype cannot
// hold those bounds (tinygrad keeps them; they would be unsound).
SymBounds IntBounds(Scalar s, Int128 lo, Int128 hi) {
  if (!IsFloat(s) && s != Scalar::kIndex && s != Scalar::kVoid) {
    Interval r = DTypeRange(s);
    if (lo < r.min || hi > r.max) return WholeBounds(s, false);
  }
  SymBounds b;
  b.lo = lo;
  b.hi = hi;
  return b;
}

long double FloatEnd(const SymBounds& b, bool hi) {
  if (b.is_float) return hi ? b.fhi : b.flo;
  return static_cast<long double>(hi ? b.hi : b.lo);
}

// A comparison of float operands, whose result is an integer (bool).
std::optional<SymBounds> FloatCompareBounds(Op op, Scalar s, const SymBounds& a,
                                            const SymBounds& b) {
  if (op == Op::kCmplt) {
    return IntBounds(s, FloatEnd(a, true) < FloatEnd(b, false),
                     FloatEnd(a, false) < FloatEnd(b, true));
  }
  if (op == Op::kCmpne) {
    bool lo = FloatEnd(a, true) < FloatEnd(b, false) || FloatEnd(b, true) < FloatEnd(a, false);
    bool all_eq = FloatEnd(a, false) == FloatEnd(a, true) &&
                  FloatEnd(a, true) == FloatEnd(b, false) &&
                  FloatEnd(b, false) == FloatEnd(b, true);
    return IntBounds(s, lo, !all_eq);
  }
  return std::nullopt;
}

std::optional<SymBounds> ModBounds(Scalar s, Int128 l0, Int128 h0, Int128 l1, Int128 h1) {
  if (l1 == h1 && l1 > 0) {
    const Int128 c = l1;
    return IntBounds(s,
                     l0 > 0                 ? 0
                     : (0 >= l0 && l0 > -c) ? l0
                                            : -(h1 - 1),
                     h0 < 0                ? 0
                     : (0 <= h0 && h0 < c) ? h0
                                           : c - 1);
  }
  if (l1 > 0) {
    if (l0 >= 0) return IntBounds(s, 0, h1 - 1);
    if (h0 <= 0) return IntBounds(s, -(h1 - 1), 0);
    return IntBounds(s, -(h1 - 1), h1 - 1);
  }
  if (h1 < 0) {
    if (l0 >= 0) return IntBounds(s, 0, -l1 - 1);
    if (h0 <= 0) return IntBounds(s, -(-l1 - 1), 0);
    return IntBounds(s, -(-l1 - 1), -l1 - 1);
  }
  return std::nullopt;
}

// A binary op of integer operands; nullopt where only the dtype's range is known.
std::optional<SymBounds> IntBinaryBounds(Op op, Scalar s, const SymBounds& a, const SymBounds& b) {
  const Int128 l0 = a.lo, h0 = a.hi, l1 = b.lo, h1 = b.hi;
  switch (op) {
    case Op::kAdd:
      return IntBounds(s, SaturatingAdd(l0, l1), SaturatingAdd(h0, h1));
    case Op::kSub:
      return IntBounds(s, SaturatingAdd(l0, -h1), SaturatingAdd(h0, -l1));
    case Op::kAnd:
      if (IsInt(s) && l1 == h1 && l1 >= 0 && l0 >= 0) {
        return IntBounds(s, std::min<Int128>(0, l0), std::min(h0, h1));
      }
      if (s == Scalar::kBool) return IntBounds(s, l0 && l1, h0 && h1);
      return std::nullopt;
    case Op::kMul: {
      Int128 v[4] = {SaturatingMul(l0, l1), SaturatingMul(l0, h1), SaturatingMul(h0, l1),
                     SaturatingMul(h0, h1)};
      return IntBounds(s, *std::min_element(v, v + 4), *std::max_element(v, v + 4));
    }
    // Shift amounts wrap at the operand's width (IR.md; tinygrad assumes Python shifts): only
    // amounts below it shift by themselves.
    case Op::kShl:
      if (l1 == h1 && l1 >= 0 && l1 < ShiftWidth(s) && Abs(l0) < kSaturatedMax &&
          Abs(h0) < kSaturatedMax) {
        return IntBounds(s, Saturate(l0 * (Int128{1} << static_cast<int>(l1))),
                         Saturate(h0 * (Int128{1} << static_cast<int>(l1))));
      }
      return std::nullopt;
    case Op::kShr:
      if (l1 == h1 && l1 >= 0 && l1 < ShiftWidth(s)) {
        return IntBounds(s, FloorDiv(l0, Int128{1} << static_cast<int>(l1)),
                         FloorDiv(h0, Int128{1} << static_cast<int>(l1)));
      }
      return std::nullopt;
    case Op::kMod:
      return ModBounds(s, l0, h0, l1, h1);
    case Op::kIdiv:
      if ((l1 > 0 && h1 > 0) || (l1 < 0 && h1 < 0)) {
        Int128 v[4] = {CDiv(l0, l1), CDiv(l0, h1), CDiv(h0, l1), CDiv(h0, h1)};
        return IntBounds(s, *std::min_element(v, v + 4), *std::max_element(v, v + 4));
      }
      return std::nullopt;
    case Op::kMax:
      return IntBounds(s, std::max(l0, l1), std::max(h0, h1));
    case Op::kCmplt:
      return IntBounds(s, h0 < l1, l0 < h1);
    case Op::kCmpne:
      return IntBounds(s, (h0 < l1) || (h1 < l0), !(l0 == h0 && h0 == l1 && l1 == h1));
    case Op::kOr:
      if (s == Scalar::kBool) return IntBounds(s, l0 || l1, h0 || h1);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

SymBounds SymbolicRewriter::ComputeBounds(const UOp* n) {
  const Scalar s = S(n);
  const SymBounds whole = WholeBounds(s, n->dtype().ptr);
  const Op op = n->op();
  if (IsBinaryAlu(op) && !IsFloat(s)) {
    SymBounds a = Bounds(n->src(0)), b = Bounds(n->src(1));
    std::optional<SymBounds> out =
        a.is_float || b.is_float ? FloatCompareBounds(op, s, a, b) : IntBinaryBounds(op, s, a, b);
    return out.value_or(whole);
  }
  if (op == Op::kWhere && IsInt(s)) {
    SymBounds a = Bounds(n->src(1)), b = Bounds(n->src(2));
    if (a.is_float || b.is_float) return whole;
    return IntBounds(s, std::min(a.lo, b.lo), std::max(a.hi, b.hi));
  }
  if (op == Op::kDefineVar) return IntBounds(s, n->arg().var_min, n->arg().var_max);
  if (op == Op::kRange || op == Op::kSpecial) {
    SymBounds e = Bounds(n->src(0));
    if (e.is_float) return whole;
    return IntBounds(s, 0, SaturatingAdd(e.hi, -1));
  }
  SymBounds out;
  if (op == Op::kConst && !n->IsInvalid()) {
    if (n->arg().kind == ArgKind::kF64) {
      std::optional<double> v = FloatConstValue(n);
      if (!v.has_value()) return whole;
      out.is_float = true;
      out.flo = out.fhi = *v;
      return out;
    }
    if (IsFloat(s)) {
      out.is_float = true;
      out.flo = out.fhi = static_cast<double>(CInt(n));
      return out;
    }
    return IntBounds(s, CInt(n), CInt(n));
  }
  if (op == Op::kCast && (IsFloat(s) || IsSignedInt(s) || s == Scalar::kIndex)) {
    SymBounds src = Bounds(n->src(0));
    if (IsFloat(s)) {
      out.is_float = true;
      out.flo = static_cast<double>(FloatEnd(src, false));
      out.fhi = static_cast<double>(FloatEnd(src, true));
      return out;
    }
    if (src.is_float) return whole;
    Interval r = RangeOf(s);
    // A narrowing cast of values it cannot hold wraps: only then is its range not the source's.
    if (s != Scalar::kIndex && (src.lo < r.min || src.hi > r.max)) return whole;
    return IntBounds(s, std::max(r.min, src.lo), std::min(src.hi, r.max));
  }
  return whole;
}

const absl::flat_hash_set<const UOp*>& SymbolicRewriter::Ranges(const UOp* n) {
  if (auto it = ranges_.find(n); it != ranges_.end()) return it->second;
  for (const UOp* u : TinyToposort({n}, [&](const UOp* m) { return ranges_.contains(m); })) {
    absl::flat_hash_set<const UOp*> ret;
    for (const UOp* s : u->src()) {
      const auto& sr = ranges_.at(s);
      ret.insert(sr.begin(), sr.end());
    }
    std::vector<const UOp*> ended;
    if (int start = RangeStart(u->op()); start >= 0) {
      for (size_t i = start; i < u->num_src(); ++i) ended.push_back(u->src(i));
    }
    for (const UOp* er : ended) {
      if (er->op() == Op::kRange) {
        ret.erase(er);
      } else {
        for (const UOp* r : ranges_.at(er)) ret.erase(r);
      }
    }
    if (u->op() == Op::kRange) ret.insert(u);
    ranges_.emplace(u, std::move(ret));
  }
  return ranges_.at(n);
}

}  // namespace uopd
