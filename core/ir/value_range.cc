#include "core/ir/value_range.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace uopd {
namespace {

constexpr Int128 kI64Min = std::numeric_limits<int64_t>::min();
constexpr Int128 kI64Max = std::numeric_limits<int64_t>::max();
Int128 TruncDiv(Int128 a, Int128 b) { return a / b; }  // C++ division truncates toward zero

Interval Hull(std::initializer_list<Int128> values) {
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return {*lo, *hi};
}

Int128 PowerOfTwoCeilMinus1(Int128 v) {
  Int128 mask = 0;
  while (mask < v) mask = (mask << 1) | 1;
  return mask;
}

}  // namespace

Arg ReduceIdentityArg(Op op, Scalar scalar) {
  const bool fl = IsFloat(scalar), b = scalar == Scalar::kBool;
  if (op == Op::kAdd) return fl ? Arg::F64(0) : b ? Arg::Bool(false) : Arg::I64(0);
  if (op == Op::kMul) return fl ? Arg::F64(1) : b ? Arg::Bool(true) : Arg::I64(1);
  if (fl) return Arg::F64(-std::numeric_limits<double>::infinity());
  if (b) return Arg::Bool(false);
  return Arg::I64(static_cast<int64_t>(DTypeRange(scalar).min));
}

Interval DTypeRange(Scalar scalar) {
  if (scalar == Scalar::kBool) return {0, 1};
  if (scalar == Scalar::kIndex) return {kI64Min, kI64Max};
  if (!IsInt(scalar)) return {-kSaturatedMax, kSaturatedMax};
  int bits = IntBits(scalar);
  if (IsUnsigned(scalar)) return {0, (Int128{1} << bits) - 1};
  return {-(Int128{1} << (bits - 1)), (Int128{1} << (bits - 1)) - 1};
}

Int128 WrapToDType(Int128 value, Scalar scalar) {
  if (scalar == Scalar::kBool) return value != 0;
  if (!IsInt(scalar)) return value;
  int bits = scalar == Scalar::kIndex ? 64 : IntBits(scalar);
  unsigned __int128 mask = (static_cast<unsigned __int128>(1) << bits) - 1;
  unsigned __int128 low = static_cast<unsigned __int128>(value) & mask;
  if (!IsUnsigned(scalar) && (low >> (bits - 1)) != 0) {
    return static_cast<Int128>(low) - (Int128{1} << bits);
  }
  return static_cast<Int128>(low);
}

Int128 ConstIntValue(const UOp& node) {
  const Arg& arg = node.arg();
  Int128 raw = 0;
  switch (arg.kind) {
    case ArgKind::kI64:
      raw = arg.i;
      break;
    case ArgKind::kU64:
      raw = static_cast<uint64_t>(arg.i);
      break;
    case ArgKind::kBool:
      raw = arg.b;
      break;
    case ArgKind::kF64:
      raw = static_cast<Int128>(arg.f);
      break;
    default:
      break;
  }
  return WrapToDType(raw, node.dtype().scalar);
}

namespace {

Interval ProductRange(Interval a, Interval b) {
  return Hull({SaturatingMul(a.min, b.min), SaturatingMul(a.min, b.max),
               SaturatingMul(a.max, b.min), SaturatingMul(a.max, b.max)});
}

// Shifts below this amount shift by exactly that much; past it the code shifts modulo the
// width (Legalize), which for INDEX is 32 or 64 bits as the kernel's index width turns out.
// A longer shift gets the whole range (which for INDEX also keeps the index 64 bits wide).
int ExactShiftWidth(Scalar scalar) {
  if (scalar == Scalar::kIndex) return 32;
  return IsInt(scalar) && scalar != Scalar::kBool ? IntBits(scalar) : 0;
}

// The range of integer `op` over operands in `a` and `b`, before wrapping to the dtype (`full`
// where nothing narrower is known).
Interval BinaryRange(Op op, Scalar scalar, Interval a, Interval b, Interval full) {
  Interval r = full;
  switch (op) {
    case Op::kAdd: {
      if (scalar == Scalar::kBool) return {0, 1};
      r = {Saturate(a.min + b.min), Saturate(a.max + b.max)};
      break;
    }
    case Op::kSub: {
      r = {Saturate(a.min - b.max), Saturate(a.max - b.min)};
      break;
    }
    case Op::kMul: {
      if (scalar == Scalar::kBool) return {0, 1};
      r = ProductRange(a, b);
      break;
    }
    case Op::kIdiv: {
      if (b.min > 0 || b.max < 0) {
        r = Hull({TruncDiv(a.min, b.min), TruncDiv(a.min, b.max), TruncDiv(a.max, b.min),
                  TruncDiv(a.max, b.max)});
      } else {
        // The divisor may be zero (the lowering defines x/0) or +-1: |result| <= |x|.
        Int128 m = std::max(a.max < 0 ? -a.max : a.max, a.min < 0 ? -a.min : a.min);
        r = {-m, m};
      }
      break;
    }
    case Op::kMod: {
      Int128 bmax = std::max(b.max < 0 ? -b.max : b.max, b.min < 0 ? -b.min : b.min);
      Int128 limit = bmax > 0 ? bmax - 1 : 0;
      if (a.min >= 0 && b.min > 0 && a.max < b.min) {
        r = a;  // x % b == x for 0 <= x < b
      } else if (a.min >= 0) {
        r = {0, std::min(a.max, limit)};
      } else if (a.max <= 0) {
        r = {std::max(a.min, -limit), 0};
      } else {
        r = {std::max(a.min, -limit), std::min(a.max, limit)};
      }
      break;
    }
    case Op::kMax: {
      r = {std::max(a.min, b.min), std::max(a.max, b.max)};
      break;
    }
    case Op::kAnd:
    case Op::kOr:
    case Op::kXor: {
      if (scalar == Scalar::kBool) return {0, 1};
      if (a.min >= 0 && b.min >= 0) {
        if (op == Op::kAnd) {
          r = {0, std::min(a.max, b.max)};
        } else {
          r = {0, PowerOfTwoCeilMinus1(std::max(a.max, b.max))};
        }
      }
      break;
    }
    case Op::kShl: {
      if (b.IsConst() && b.min >= 0 && b.min < ExactShiftWidth(scalar)) {
        Int128 f = Int128{1} << static_cast<int>(b.min);
        r = {SaturatingMul(a.min, f), SaturatingMul(a.max, f)};
      }
      break;
    }
    case Op::kShr: {
      if (b.IsConst() && b.min >= 0 && b.min < ExactShiftWidth(scalar)) {
        int s = static_cast<int>(b.min);
        r = {a.min >> s, a.max >> s};  // arithmetic shift of Int128 floors, as SHR does
      }
      break;
    }
    default:
      break;
  }
  return r;
}

}  // namespace

Interval ValueRanges::Get(const UOp* node) {
  if (auto it = memo_.find(node); it != memo_.end()) return it->second;
  // Post-order walk with an explicit stack: client graphs can be deep.
  std::vector<std::pair<const UOp*, bool>> stack = {{node, false}};
  while (!stack.empty()) {
    auto [current, expanded] = stack.back();
    stack.pop_back();
    if (memo_.contains(current)) continue;
    if (!expanded) {
      stack.push_back({current, true});
      for (const UOp* src : current->src()) {
        if (!memo_.contains(src)) stack.push_back({src, false});
      }
      continue;
    }
    memo_.emplace(current, Compute(*current));
  }
  return memo_.at(node);
}

bool ValueRanges::MayWrap(const UOp* node) {
  const Scalar scalar = node->dtype().scalar;
  if (node->dtype().ptr || !IsIntLike(scalar)) return false;
  for (const UOp* src : node->src()) Get(src);
  const Interval full = DTypeRange(scalar), r = Unwrapped(*node);
  return r.min < full.min || r.max > full.max;
}

Interval ValueRanges::Compute(const UOp& node) {
  const Scalar scalar = node.dtype().scalar;
  const Interval full = DTypeRange(scalar);
  if (node.dtype().ptr || !IsIntLike(scalar)) return full;
  // Anything that may leave the dtype's range can wrap: then only the dtype's range is sound.
  const Interval r = Unwrapped(node);
  if (r.min < full.min || r.max > full.max) return full;
  return r;
}

Interval ValueRanges::Unwrapped(const UOp& node) {
  const Scalar scalar = node.dtype().scalar;
  const Interval full = DTypeRange(scalar);
  auto src = [&](size_t i) { return memo_.at(node.src(i)); };
  Interval r = full;
  switch (node.op()) {
    case Op::kConst: {
      if (node.IsInvalid()) return full;
      Int128 v = ConstIntValue(node);
      return {v, v};
    }
    case Op::kDefineVar:
      r = {node.arg().var_min, node.arg().var_max};
      break;
    case Op::kRange: {
      Interval end = src(0);
      r = {0, std::max<Int128>(0, end.max - 1)};
      break;
    }
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kIdiv:
    case Op::kMod:
    case Op::kMax:
    case Op::kAnd:
    case Op::kOr:
    case Op::kXor:
    case Op::kShl:
    case Op::kShr:
      r = BinaryRange(node.op(), scalar, src(0), src(1), full);
      break;
    case Op::kNeg: {
      Interval a = src(0);
      r = {-a.max, -a.min};
      break;
    }
    case Op::kMulacc: {
      Interval a = src(0), b = src(1), c = src(2);
      Interval p = ProductRange(a, b);
      r = {Saturate(p.min + c.min), Saturate(p.max + c.max)};
      break;
    }
    case Op::kCmplt: {
      Interval a = src(0), b = src(1);
      if (a.max < b.min) return {1, 1};
      if (a.min >= b.max) return {0, 0};
      return {0, 1};
    }
    case Op::kCmpne:
    case Op::kCmpeq: {
      Interval a = src(0), b = src(1);
      bool disjoint = a.max < b.min || b.max < a.min;
      bool same_const = a.IsConst() && b.IsConst() && a.min == b.min;
      bool ne = node.op() == Op::kCmpne;
      if (disjoint) return ne ? Interval{1, 1} : Interval{0, 0};
      if (same_const) return ne ? Interval{0, 0} : Interval{1, 1};
      return {0, 1};
    }
    case Op::kWhere: {
      Interval c = src(0);
      const UOp* a = node.src(1);
      const UOp* b = node.src(2);
      // An Invalid branch yields no value, so it does not widen the range.
      if (c.min == 1 || b->IsInvalid()) return a->IsInvalid() ? full : memo_.at(a);
      if (c.max == 0 || a->IsInvalid()) return memo_.at(b);
      Interval ia = memo_.at(a), ib = memo_.at(b);
      r = {std::min(ia.min, ib.min), std::max(ia.max, ib.max)};
      break;
    }
    case Op::kCast: {
      const UOp* from = node.src(0);
      if (scalar == Scalar::kBool) return {0, 1};
      if (IsIntLike(from->dtype().scalar)) r = memo_.at(from);
      break;
    }
    default:
      return full;
  }
  return r;
}

}  // namespace uopd
