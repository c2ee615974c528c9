// SymbolicRewriter: bounds of index expressions (tinygrad's vmin/vmax) and the ranges a node
// depends on.
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

SymBounds SymbolicRewriter::ComputeBounds(const UOp* n) {
  const Scalar s = S(n);
  SymBounds out;
  auto whole = [&]() {
    SymBounds b;
    if (IsFloat(s)) {
      b.is_float = true;
      b.flo = -std::numeric_limits<double>::infinity();
      b.fhi = std::numeric_limits<double>::infinity();
    } else if (s == Scalar::kVoid || n->dtype().ptr) {
      b.lo = -kSaturatedMax;
      b.hi = kSaturatedMax;
    } else {
      Interval r = RangeOf(s);
      b.lo = r.min;
      b.hi = r.max;
    }
    return b;
  };
  auto ints = [&](Int128 lo, Int128 hi) {
    SymBounds b;
    b.lo = lo;
    b.hi = hi;
    // Wrapping integer dtypes: bounds past the dtype's range would be unsound (tinygrad keeps
    // them); the dtype's whole range is what the node can hold.
    if (!IsFloat(s) && s != Scalar::kIndex && s != Scalar::kVoid) {
      Interval r = DTypeRange(s);
      if (lo < r.min || hi > r.max) return whole();
    }
    return b;
  };
  auto fl = [](const SymBounds& b, bool hi) -> long double {
    if (b.is_float) return hi ? b.fhi : b.flo;
    return static_cast<long double>(hi ? b.hi : b.lo);
  };
  const Op op = n->op();
  if (IsBinaryAlu(op) && !IsFloat(s)) {
    SymBounds a = Bounds(n->src(0)), b = Bounds(n->src(1));
    if (a.is_float || b.is_float) {
      if (op == Op::kCmplt) return ints(fl(a, true) < fl(b, false), fl(a, false) < fl(b, true));
      if (op == Op::kCmpne) {
        bool lo = fl(a, true) < fl(b, false) || fl(b, true) < fl(a, false);
        bool all_eq = fl(a, false) == fl(a, true) && fl(a, true) == fl(b, false) &&
                      fl(b, false) == fl(b, true);
        return ints(lo, !all_eq);
      }
      return whole();
    }
    const Int128 l0 = a.lo, h0 = a.hi, l1 = b.lo, h1 = b.hi;
    switch (op) {
      case Op::kAdd:
        return ints(SaturatingAdd(l0, l1), SaturatingAdd(h0, h1));
      case Op::kSub:
        return ints(SaturatingAdd(l0, -h1), SaturatingAdd(h0, -l1));
      case Op::kAnd:
        if (IsInt(s) && l1 == h1 && l1 >= 0 && l0 >= 0) {
          return ints(std::min<Int128>(0, l0), std::min(h0, h1));
        }
        if (s == Scalar::kBool) return ints(l0 && l1, h0 && h1);
        break;
      case Op::kMul: {
        Int128 v[4] = {SaturatingMul(l0, l1), SaturatingMul(l0, h1), SaturatingMul(h0, l1),
                       SaturatingMul(h0, h1)};
        return ints(*std::min_element(v, v + 4), *std::max_element(v, v + 4));
      }
      // Shift amounts wrap at the operand's width (IR.md; tinygrad assumes Python shifts):
      // only amounts below it shift by themselves.
      case Op::kShl:
        if (l1 == h1 && l1 >= 0 && l1 < ShiftWidth(s) && Abs(l0) < kSaturatedMax &&
            Abs(h0) < kSaturatedMax) {
          return ints(Saturate(l0 * (Int128{1} << static_cast<int>(l1))),
                      Saturate(h0 * (Int128{1} << static_cast<int>(l1))));
        }
        break;
      case Op::kShr:
        if (l1 == h1 && l1 >= 0 && l1 < ShiftWidth(s)) {
          return ints(FloorDiv(l0, Int128{1} << static_cast<int>(l1)),
                      FloorDiv(h0, Int128{1} << static_cast<int>(l1)));
        }
        break;
      case Op::kMod:
        if (l1 == h1 && l1 > 0) {
          const Int128 c = l1;
          return ints(l0 > 0                 ? 0
                      : (0 >= l0 && l0 > -c) ? l0
                                             : -(h1 - 1),
                      h0 < 0                ? 0
                      : (0 <= h0 && h0 < c) ? h0
                                            : c - 1);
        }
        if (l1 > 0) {
          if (l0 >= 0) return ints(0, h1 - 1);
          if (h0 <= 0) return ints(-(h1 - 1), 0);
          return ints(-(h1 - 1), h1 - 1);
        }
        if (h1 < 0) {
          if (l0 >= 0) return ints(0, -l1 - 1);
          if (h0 <= 0) return ints(-(-l1 - 1), 0);
          return ints(-(-l1 - 1), -l1 - 1);
        }
        break;
      case Op::kIdiv:
        if ((l1 > 0 && h1 > 0) || (l1 < 0 && h1 < 0)) {
          Int128 v[4] = {CDiv(l0, l1), CDiv(l0, h1), CDiv(h0, l1), CDiv(h0, h1)};
          return ints(*std::min_element(v, v + 4), *std::max_element(v, v + 4));
        }
        break;
      case Op::kMax:
        return ints(std::max(l0, l1), std::max(h0, h1));
      case Op::kCmplt:
        return ints(h0 < l1, l0 < h1);
      case Op::kCmpne:
        return ints((h0 < l1) || (h1 < l0), !(l0 == h0 && h0 == l1 && l1 == h1));
      case Op::kOr:
        if (s == Scalar::kBool) return ints(l0 || l1, h0 || h1);
        break;
      default:
        break;
    }
    return whole();
  }
  if (op == Op::kWhere && IsInt(s)) {
    SymBounds a = Bounds(n->src(1)), b = Bounds(n->src(2));
    if (a.is_float || b.is_float) return whole();
    return ints(std::min(a.lo, b.lo), std::max(a.hi, b.hi));
  }
  if (op == Op::kDefineVar) return ints(n->arg().var_min, n->arg().var_max);
  if (op == Op::kRange || op == Op::kSpecial) {
    SymBounds e = Bounds(n->src(0));
    if (e.is_float) return whole();
    return ints(0, SaturatingAdd(e.hi, -1));
  }
  if (op == Op::kConst && !n->IsInvalid()) {
    if (n->arg().kind == ArgKind::kF64) {
      std::optional<double> v = FloatConstValue(n);
      if (!v.has_value()) return whole();
      out.is_float = true;
      out.flo = out.fhi = *v;
      return out;
    }
    if (IsFloat(s)) {
      out.is_float = true;
      out.flo = out.fhi = static_cast<double>(CInt(n));
      return out;
    }
    return ints(CInt(n), CInt(n));
  }
  if (op == Op::kCast && (IsFloat(s) || IsSignedInt(s) || s == Scalar::kIndex)) {
    SymBounds src = Bounds(n->src(0));
    if (IsFloat(s)) {
      out.is_float = true;
      out.flo = static_cast<double>(fl(src, false));
      out.fhi = static_cast<double>(fl(src, true));
      return out;
    }
    if (src.is_float) return whole();
    Interval r = RangeOf(s);
    // A narrowing cast of values it cannot hold wraps: only then is its range not the source's.
    if (s != Scalar::kIndex && (src.lo < r.min || src.hi > r.max)) return whole();
    return ints(std::max(r.min, src.lo), std::min(src.hi, r.max));
  }
  return whole();
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
