// The symbolic rewriter's own helpers (tinygrad's symbolic.py and uop helpers it leans on):
// shared by the files the rewriter is split into (symbolic.cc: node builders and the rewrite
// engine; symbolic_bounds.cc; symbolic_rules.cc; symbolic_divmod.cc; symbolic_valid.cc), and by
// nothing else.
#ifndef UOPD_CORE_IR_SYMBOLIC_INTERNAL_H_
#define UOPD_CORE_IR_SYMBOLIC_INTERNAL_H_

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/ir/symbolic.h"

namespace uopd::symbolic_internal {

// How deep the recursive helpers (const_factor, divides, divide_exact) follow a sum or product;
// beyond it they answer "unknown", which only leaves a rule unapplied.
inline constexpr int kMaxDepth = 512;
// A rewrite that keeps producing new nodes is a rule cycle: past this many steps, or nodes, per
// node of the kernel (plus a floor) the passes give up and the caller keeps the AST as it was.
inline constexpr int64_t kStepsPerNode = 100, kMinSteps = 1'000'000;
inline constexpr int64_t kNodesPerNode = 20, kMinNodes = 100'000;
// tinygrad's INDEX is 800 bits wide; this stands in for its limits (bounds saturate beyond it,
// at kSaturatedMax).
inline constexpr Int128 kIndexMax = (Int128{1} << 120) - 1;
inline Int128 Abs(Int128 v) { return v < 0 ? -v : v; }
inline Int128 Gcd(Int128 a, Int128 b) {
  a = Abs(a);
  b = Abs(b);
  while (b != 0) {
    Int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}
// Python's // and % (floor), and tinygrad's cdiv/cmod (truncating, C's / and %).
inline Int128 FloorDiv(Int128 a, Int128 b) {
  Int128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline Int128 FloorMod(Int128 a, Int128 b) { return a - FloorDiv(a, b) * b; }
inline Int128 CDiv(Int128 a, Int128 b) { return b == 0 ? 0 : a / b; }
inline Int128 CMod(Int128 a, Int128 b) { return a - CDiv(a, b) * b; }

// tinygrad's Ops enum values (uop/__init__.py): the first field of UOp.tuplize.
inline int TinyOpOrder(Op op) {
  switch (op) {
    case Op::kDefineGlobal:
      return 1;
    case Op::kDefineVar:
      return 2;
    case Op::kSpecial:
      return 4;
    case Op::kDefineLocal:
      return 5;
    case Op::kDefineReg:
      return 6;
    case Op::kSink:
      return 13;
    case Op::kAfter:
      return 14;
    case Op::kGroup:
      return 15;
    case Op::kGep:
      return 16;
    case Op::kVectorize:
      return 17;
    case Op::kIndex:
      return 18;
    case Op::kLoad:
      return 19;
    case Op::kStore:
      return 20;
    case Op::kWmma:
      return 21;
    case Op::kCast:
      return 22;
    case Op::kBitcast:
      return 23;
    case Op::kReshape:  // flattened away after decoding; here for completeness
      return 75;
    case Op::kExp2:
      return 24;
    case Op::kLog2:
      return 25;
    case Op::kSin:
      return 26;
    case Op::kSqrt:
      return 27;
    case Op::kReciprocal:
      return 28;
    case Op::kNeg:
      return 29;
    case Op::kTrunc:
      return 30;
    case Op::kAdd:
      return 31;
    case Op::kMul:
      return 32;
    case Op::kShl:
      return 33;
    case Op::kShr:
      return 34;
    case Op::kIdiv:
      return 35;
    case Op::kMax:
      return 36;
    case Op::kMod:
      return 37;
    case Op::kCmplt:
      return 38;
    case Op::kCmpne:
      return 39;
    case Op::kCmpeq:
      return 40;
    case Op::kXor:
      return 41;
    case Op::kOr:
      return 42;
    case Op::kAnd:
      return 43;
    case Op::kThreefry:
      return 44;
    case Op::kSub:
      return 45;
    case Op::kFdiv:
      return 46;
    case Op::kPow:
      return 47;
    case Op::kWhere:
      return 48;
    case Op::kMulacc:
      return 49;
    case Op::kBarrier:
      return 50;
    case Op::kRange:
      return 51;
    case Op::kIf:
      return 52;
    case Op::kEnd:
      return 53;
    case Op::kEndif:
      return 54;
    case Op::kVconst:
      return 55;
    case Op::kConst:
      return 56;
    case Op::kCustom:
      return 57;
    case Op::kReduce:
      return 83;
    case Op::kUnroll:
      return 85;
    case Op::kContract:
      return 86;
  }
  return 1000;
}

// tinygrad's DType.priority (and bitsize, which separates void from index); an fnuz fp8 type
// shares its OCP twin's priority and sorts after it by name, so each takes a place of its own.
inline std::pair<int, int> DTypeOrder(Scalar s) {
  switch (s) {
    case Scalar::kVoid:
      return {-1, 0};
    case Scalar::kIndex:
      return {-1, 800};
    case Scalar::kBool:
      return {0, 1};
    case Scalar::kInt8:
      return {1, 8};
    case Scalar::kUint8:
      return {2, 8};
    case Scalar::kInt16:
      return {3, 16};
    case Scalar::kUint16:
      return {4, 16};
    case Scalar::kInt32:
      return {5, 32};
    case Scalar::kUint32:
      return {6, 32};
    case Scalar::kInt64:
      return {7, 64};
    case Scalar::kUint64:
      return {8, 64};
    case Scalar::kFp8E4M3:
      return {9, 8};
    case Scalar::kFp8E4M3Fnuz:
      return {10, 8};
    case Scalar::kFp8E5M2:
      return {11, 8};
    case Scalar::kFp8E5M2Fnuz:
      return {12, 8};
    case Scalar::kFloat16:
      return {13, 16};
    case Scalar::kBfloat16:
      return {14, 16};
    case Scalar::kFloat32:
      return {15, 32};
    case Scalar::kFloat64:
      return {16, 64};
  }
  return {100, 0};
}

inline bool IsCommutative(Op op) {
  switch (op) {
    case Op::kAdd:
    case Op::kMul:
    case Op::kMax:
    case Op::kCmpne:
    case Op::kCmpeq:
    case Op::kXor:
    case Op::kAnd:
    case Op::kOr:
      return true;
    default:
      return false;
  }
}

inline bool IsIrreducible(const UOp* n) {
  return n->op() == Op::kConst || n->op() == Op::kDefineVar || n->op() == Op::kSpecial ||
         n->op() == Op::kRange;
}

inline Scalar S(const UOp* n) { return n->dtype().scalar; }
inline bool IsIndex(const UOp* n) { return !n->dtype().ptr && S(n) == Scalar::kIndex; }
inline bool IsBoolNode(const UOp* n) { return !n->dtype().ptr && S(n) == Scalar::kBool; }
inline bool IsFloatNode(const UOp* n) { return IsFloat(S(n)); }
// dtypes.ints + (bool, index)
inline bool IsIntBoolIndex(const UOp* n) { return !n->dtype().ptr && IsIntLike(S(n)); }
// dtypes.ints + (index,)
inline bool IsIntOrIndex(const UOp* n) { return !n->dtype().ptr && IsInt(S(n)); }

// A CONST that is a number (UPat.cvar; Invalid is not one).
inline bool IsCvar(const UOp* n) { return n->op() == Op::kConst && !n->IsInvalid(); }
inline long double NumValue(const UOp* n) {
  const Arg& a = n->arg();
  switch (a.kind) {
    case ArgKind::kI64:
      return static_cast<long double>(a.i);
    case ArgKind::kU64:
      return static_cast<long double>(static_cast<uint64_t>(a.i));
    case ArgKind::kBool:
      return a.b ? 1 : 0;
    case ArgKind::kF64:
      return a.f;
    default:
      return std::numeric_limits<long double>::quiet_NaN();
  }
}
// A CONST equal to `v` as Python's == compares (0 == 0.0 == False).
inline bool ConstIs(const UOp* n, long double v) { return IsCvar(n) && NumValue(n) == v; }
// The integer argument of an integer or bool CONST, as written (tinygrad keeps it unwrapped).
inline Int128 CInt(const UOp* n) {
  const Arg& a = n->arg();
  if (a.kind == ArgKind::kU64) return static_cast<Int128>(static_cast<uint64_t>(a.i));
  if (a.kind == ArgKind::kBool) return a.b ? 1 : 0;
  if (a.kind == ArgKind::kF64) return static_cast<Int128>(a.f);
  return a.i;
}
inline bool IsIntCvar(const UOp* n) {
  return IsCvar(n) && (n->arg().kind == ArgKind::kI64 || n->arg().kind == ArgKind::kU64 ||
                       n->arg().kind == ArgKind::kBool);
}
inline bool Truthy(const UOp* n) { return NumValue(n) != 0; }
// The value a float CONST stands for: its argument rounded to its dtype. Narrow floats (float16,
// bfloat16, fp8) are not rounded here: nullopt.
inline std::optional<double> FloatConstValue(const UOp* n) {
  const double f = n->arg().f;
  if (S(n) == Scalar::kFloat64) return f;
  if (S(n) == Scalar::kFloat32) return static_cast<double>(static_cast<float>(f));
  return std::nullopt;
}

inline Interval RangeOf(Scalar s) {
  if (s == Scalar::kIndex) return {-kIndexMax - 1, kIndexMax};
  return DTypeRange(s);
}

// A WHERE(cond, x, CONST Invalid): tinygrad's invalid_gate.
inline bool InvalidGate(const UOp* n, const UOp*& cond, const UOp*& x, const UOp*& inv) {
  if (n->op() != Op::kWhere || !n->src(2)->IsInvalid()) return false;
  cond = n->src(0);
  x = n->src(1);
  inv = n->src(2);
  return true;
}

// Tries f(a, b) on a binary node's sources, then f(b, a) when the op is commutative: the order
// in which tinygrad's UPat tries the permutations of a commutative pattern.
template <typename F>
const UOp* Perm2(const UOp* n, F&& f) {
  if (n->num_src() != 2) return nullptr;
  if (const UOp* r = f(n->src(0), n->src(1))) return r;
  if (IsCommutative(n->op())) return f(n->src(1), n->src(0));
  return nullptr;
}
// Binds (a, c) when `n` is op(a, CONST c) or, for commutative ops, op(CONST c, a); `fn` gets
// each binding in tinygrad's order until it returns a node.
template <typename F>
const UOp* WithConst(const UOp* n, Op op, F&& fn) {
  if (n->op() != op) return nullptr;
  return Perm2(
      n, [&](const UOp* a, const UOp* c) -> const UOp* { return IsCvar(c) ? fn(a, c) : nullptr; });
}

// Python's comparison of two UOp.tuplize tuples: (tinygrad op, arg, dtype, *sources).
inline int CompareArgs(const UOp* a, const UOp* b) {
  const Arg &x = a->arg(), &y = b->arg();
  auto cmp = [](auto p, auto q) { return p < q ? -1 : (q < p ? 1 : 0); };
  if (a->op() == Op::kConst) {
    if (a->IsInvalid() || b->IsInvalid()) {
      return a->IsInvalid() == b->IsInvalid() ? 0 : (a->IsInvalid() ? 1 : -1);
    }
    const bool fa = x.kind == ArgKind::kF64, fb = y.kind == ArgKind::kF64;
    if (!fa && !fb) return cmp(CInt(a), CInt(b));
    return cmp(NumValue(a), NumValue(b));
  }
  if (x.kind != y.kind) return cmp(static_cast<int>(x.kind), static_cast<int>(y.kind));
  switch (x.kind) {
    case ArgKind::kRange: {
      // (id, ..., AxisType): ids compare as ints; an AxisType cannot be ordered against an int
      // or another AxisType in Python (those never meet in a valid kernel).
      const size_t n = std::min(x.axis.size(), y.axis.size());
      for (size_t i = 0; i < n; ++i) {
        if (x.axis[i] != y.axis[i]) return cmp(x.axis[i], y.axis[i]);
      }
      if (x.axis.size() != y.axis.size()) return cmp(x.axis.size(), y.axis.size());
      return cmp(static_cast<int>(x.axis_type), static_cast<int>(y.axis_type));
    }
    case ArgKind::kVar:
      if (x.str != y.str) return cmp(x.str, y.str);
      if (x.var_min != y.var_min) return cmp(x.var_min, y.var_min);
      if (x.var_max != y.var_max) return cmp(x.var_max, y.var_max);
      return cmp(x.var_multiple, y.var_multiple);
    case ArgKind::kI64:
    case ArgKind::kU64:
    case ArgKind::kBool:
      return cmp(CInt(a), CInt(b));
    case ArgKind::kF64:
      return cmp(x.f, y.f);
    case ArgKind::kReduceOp:
      return cmp(TinyOpOrder(x.reduce_op), TinyOpOrder(y.reduce_op));
    case ArgKind::kKernel:
    case ArgKind::kStr:
      return cmp(x.str, y.str);
    default:
      return 0;
  }
}

inline bool TupLess(const UOp* a, const UOp* b) {
  while (a != b) {
    const int oa = TinyOpOrder(a->op()), ob = TinyOpOrder(b->op());
    if (oa != ob) return oa < ob;
    if (int c = CompareArgs(a, b); c != 0) return c < 0;
    if (!(a->dtype() == b->dtype())) {
      auto ka = DTypeOrder(a->dtype().scalar), kb = DTypeOrder(b->dtype().scalar);
      if (ka != kb) return ka < kb;
      return a->dtype().count < b->dtype().count;
    }
    const size_t n = std::min(a->num_src(), b->num_src());
    size_t i = 0;
    while (i < n && a->src(i) == b->src(i)) ++i;
    if (i == n) return a->num_src() < b->num_src();
    a = a->src(i);
    b = b->src(i);
  }
  return false;
}

// tinygrad's toposort order: depth first, sources in order, each node after its sources. Nodes
// `skip` accepts are left out, and so is what lies only below them.
template <typename Skip>
std::vector<const UOp*> TinyToposort(const std::vector<const UOp*>& roots, Skip&& skip) {
  std::vector<const UOp*> out;
  absl::flat_hash_set<const UOp*> done;
  std::vector<std::pair<const UOp*, bool>> stack;
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.push_back({*it, false});
  while (!stack.empty()) {
    auto [node, visited] = stack.back();
    stack.pop_back();
    if (done.contains(node)) continue;
    if (!visited) {
      if (skip(node)) continue;
      stack.push_back({node, true});
      for (auto it = node->src().rbegin(); it != node->src().rend(); ++it) {
        stack.push_back({*it, false});
      }
    } else {
      done.insert(node);
      out.push_back(node);
    }
  }
  return out;
}
inline std::vector<const UOp*> TinyToposort(const std::vector<const UOp*>& roots) {
  return TinyToposort(roots, [](const UOp*) { return false; });
}

inline int RangeStart(Op op) {
  switch (op) {
    case Op::kReduce:
    case Op::kEnd:
      return 1;
    case Op::kStore:
      return 2;
    default:
      return -1;
  }
}

// tinygrad's can_lossless_cast(dt0, dt1): dt1 holds every value of dt0.
inline bool CanLosslessCast(Scalar dt0, Scalar dt1) {
  if (dt0 == dt1 || dt0 == Scalar::kBool) return true;
  auto in = [&](std::initializer_list<Scalar> l) {
    return std::find(l.begin(), l.end(), dt0) != l.end();
  };
  using enum Scalar;
  switch (dt1) {
    case kIndex:
      return IsInt(dt0) && dt0 != kIndex;
    case kFloat64:
      return IsFp8(dt0) ||
             in({kFloat32, kFloat16, kBfloat16, kUint32, kUint16, kUint8, kInt32, kInt16, kInt8});
    case kFloat32:
      return IsFp8(dt0) || in({kFloat16, kBfloat16, kUint16, kUint8, kInt16, kInt8});
    case kFloat16:
      return IsFp8(dt0) || in({kUint8, kInt8});
    case kUint64:
      return in({kUint32, kUint16, kUint8});
    case kUint32:
      return in({kUint16, kUint8});
    case kUint16:
      return in({kUint8});
    case kInt64:
      return in({kUint32, kUint16, kUint8, kInt32, kInt16, kInt8});
    case kInt32:
      return in({kUint16, kUint8, kInt16, kInt8});
    case kInt16:
      return in({kUint8, kInt8});
    default:
      return false;
  }
}

// The bits a shift amount is taken modulo (IR.md): the operand's width, 64 for INDEX.
inline int ShiftWidth(Scalar s) { return s == Scalar::kIndex ? 64 : (IsInt(s) ? IntBits(s) : 0); }

inline bool IsSignedInt(Scalar s) {
  return s == Scalar::kInt8 || s == Scalar::kInt16 || s == Scalar::kInt32 || s == Scalar::kInt64;
}

}  // namespace uopd::symbolic_internal

#endif  // UOPD_CORE_IR_SYMBOLIC_INTERNAL_H_
