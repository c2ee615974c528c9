#include "core/ir/symbolic.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"

namespace uopd {
namespace {

// How deep the recursive helpers (const_factor, divides, divide_exact) follow a sum or product;
// beyond it they answer "unknown", which only leaves a rule unapplied.
constexpr int kMaxDepth = 512;
// A rewrite that keeps producing new nodes is a rule cycle: past this many steps, or nodes, per
// node of the kernel (plus a floor) the passes give up and the caller keeps the AST as it was.
constexpr int64_t kStepsPerNode = 100, kMinSteps = 1'000'000;
constexpr int64_t kNodesPerNode = 20, kMinNodes = 100'000;
// tinygrad's INDEX is 800 bits wide; this stands in for its limits (bounds saturate beyond it,
// at kSaturatedMax).
constexpr Int128 kIndexMax = (Int128{1} << 120) - 1;
Int128 Abs(Int128 v) { return v < 0 ? -v : v; }
Int128 Gcd(Int128 a, Int128 b) {
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
Int128 FloorDiv(Int128 a, Int128 b) {
  Int128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
Int128 FloorMod(Int128 a, Int128 b) { return a - FloorDiv(a, b) * b; }
Int128 CDiv(Int128 a, Int128 b) { return b == 0 ? 0 : a / b; }
Int128 CMod(Int128 a, Int128 b) { return a - CDiv(a, b) * b; }

// tinygrad's Ops enum values (uop/__init__.py): the first field of UOp.tuplize.
int TinyOpOrder(Op op) {
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

// tinygrad's DType.priority (and bitsize, which separates void from index).
std::pair<int, int> DTypeOrder(Scalar s) {
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
    case Scalar::kFp8E5M2:
      return {10, 8};
    case Scalar::kFloat16:
      return {11, 16};
    case Scalar::kBfloat16:
      return {12, 16};
    case Scalar::kFloat32:
      return {13, 32};
    case Scalar::kFloat64:
      return {14, 64};
  }
  return {100, 0};
}

bool IsCommutative(Op op) {
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

bool IsIrreducible(const UOp* n) {
  return n->op() == Op::kConst || n->op() == Op::kDefineVar || n->op() == Op::kSpecial ||
         n->op() == Op::kRange;
}

Scalar S(const UOp* n) { return n->dtype().scalar; }
bool IsIndex(const UOp* n) { return !n->dtype().ptr && S(n) == Scalar::kIndex; }
bool IsBoolNode(const UOp* n) { return !n->dtype().ptr && S(n) == Scalar::kBool; }
bool IsFloatNode(const UOp* n) { return IsFloat(S(n)); }
// dtypes.ints + (bool, index)
bool IsIntBoolIndex(const UOp* n) { return !n->dtype().ptr && IsIntLike(S(n)); }
// dtypes.ints + (index,)
bool IsIntOrIndex(const UOp* n) { return !n->dtype().ptr && IsInt(S(n)); }

// A CONST that is a number (UPat.cvar; Invalid is not one).
bool IsCvar(const UOp* n) { return n->op() == Op::kConst && !n->IsInvalid(); }
long double NumValue(const UOp* n) {
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
bool ConstIs(const UOp* n, long double v) { return IsCvar(n) && NumValue(n) == v; }
// The integer argument of an integer or bool CONST, as written (tinygrad keeps it unwrapped).
Int128 CInt(const UOp* n) {
  const Arg& a = n->arg();
  if (a.kind == ArgKind::kU64) return static_cast<Int128>(static_cast<uint64_t>(a.i));
  if (a.kind == ArgKind::kBool) return a.b ? 1 : 0;
  if (a.kind == ArgKind::kF64) return static_cast<Int128>(a.f);
  return a.i;
}
bool IsIntCvar(const UOp* n) {
  return IsCvar(n) && (n->arg().kind == ArgKind::kI64 || n->arg().kind == ArgKind::kU64 ||
                       n->arg().kind == ArgKind::kBool);
}
bool Truthy(const UOp* n) { return NumValue(n) != 0; }
// The value a float CONST stands for: its argument rounded to its dtype. Narrow floats (float16,
// bfloat16, fp8) are not rounded here: nullopt.
std::optional<double> FloatConstValue(const UOp* n) {
  const double f = n->arg().f;
  if (S(n) == Scalar::kFloat64) return f;
  if (S(n) == Scalar::kFloat32) return static_cast<double>(static_cast<float>(f));
  return std::nullopt;
}

Interval RangeOf(Scalar s) {
  if (s == Scalar::kIndex) return {-kIndexMax - 1, kIndexMax};
  return DTypeRange(s);
}

// A WHERE(cond, x, CONST Invalid): tinygrad's invalid_gate.
bool InvalidGate(const UOp* n, const UOp*& cond, const UOp*& x, const UOp*& inv) {
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
int CompareArgs(const UOp* a, const UOp* b) {
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
      return cmp(x.var_max, y.var_max);
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

bool TupLess(const UOp* a, const UOp* b) {
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
std::vector<const UOp*> TinyToposort(const std::vector<const UOp*>& roots) {
  return TinyToposort(roots, [](const UOp*) { return false; });
}

int RangeStart(Op op) {
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
bool CanLosslessCast(Scalar dt0, Scalar dt1) {
  if (dt0 == dt1 || dt0 == Scalar::kBool) return true;
  auto in = [&](std::initializer_list<Scalar> l) {
    return std::find(l.begin(), l.end(), dt0) != l.end();
  };
  using enum Scalar;
  switch (dt1) {
    case kIndex:
      return IsInt(dt0) && dt0 != kIndex;
    case kFloat64:
      return in({kFloat32, kFloat16, kBfloat16, kFp8E4M3, kFp8E5M2, kUint32, kUint16, kUint8,
                 kInt32, kInt16, kInt8});
    case kFloat32:
      return in({kFloat16, kBfloat16, kFp8E4M3, kFp8E5M2, kUint16, kUint8, kInt16, kInt8});
    case kFloat16:
      return in({kFp8E4M3, kFp8E5M2, kUint8, kInt8});
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
int ShiftWidth(Scalar s) { return s == Scalar::kIndex ? 64 : (IsInt(s) ? IntBits(s) : 0); }

bool IsSignedInt(Scalar s) {
  return s == Scalar::kInt8 || s == Scalar::kInt16 || s == Scalar::kInt32 || s == Scalar::kInt64;
}

}  // namespace

std::vector<const UOp*> TinygradToposort(const UOp* root) { return TinyToposort({root}); }

// ---- node builders ----------------------------------------------------------------------------

const UOp* SymbolicRewriter::Alu(Op op, const UOp* a, const UOp* b) {
  DType dtype = IsComparison(op) ? DType::Of(Scalar::kBool) : b->dtype();
  return g_.Make(op, dtype, {a, b});
}

const UOp* SymbolicRewriter::ConstLike(const UOp* like, Int128 v) {
  DType dtype = like->dtype().Base();
  if (dtype.scalar == Scalar::kBool) return g_.Make(Op::kConst, dtype, {}, Arg::Bool(v != 0));
  if (IsFloat(dtype.scalar)) {
    return g_.Make(Op::kConst, dtype, {}, Arg::F64(static_cast<double>(v)));
  }
  if (v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max()) {
    return g_.Make(Op::kConst, dtype, {}, Arg::I64(static_cast<int64_t>(v)));
  }
  if (dtype.scalar == Scalar::kUint64 && v > 0 && v <= std::numeric_limits<uint64_t>::max()) {
    Arg arg;
    arg.kind = ArgKind::kU64;
    arg.i = static_cast<int64_t>(static_cast<uint64_t>(v));
    return g_.Make(Op::kConst, dtype, {}, arg);
  }
  // Bounds of a degenerate expression: no constant of the kernel's dtypes holds it.
  if (status_.ok()) status_ = absl::InternalError("symbolic: a constant beyond 64 bits");
  return g_.Make(Op::kConst, dtype, {}, Arg::I64(0));
}

const UOp* SymbolicRewriter::IndexConst(Int128 v) {
  return g_.Make(
      Op::kConst, DType::Of(Scalar::kIndex), {},
      Arg::I64(static_cast<int64_t>(std::clamp<Int128>(v, std::numeric_limits<int64_t>::min(),
                                                       std::numeric_limits<int64_t>::max()))));
}

const UOp* SymbolicRewriter::Neg(const UOp* a) {
  if (IsBoolNode(a)) return Alu(Op::kCmpne, a, ConstLike(a, 1));
  return MulC(a, -1);
}

const UOp* SymbolicRewriter::Where(const UOp* c, const UOp* t, const UOp* f) {
  return g_.Make(Op::kWhere, f->dtype(), {c, t, f});
}

const UOp* SymbolicRewriter::Cast(const UOp* x, const DType& dtype) {
  if (x->dtype() == dtype) return x;
  return g_.Make(Op::kCast, dtype, {x});
}

const UOp* SymbolicRewriter::Sum(const std::vector<const UOp*>& terms) {
  const UOp* acc = terms.front();
  const Op op = IsBoolNode(acc) ? Op::kOr : Op::kAdd;
  for (size_t i = 1; i < terms.size(); ++i) acc = Alu(op, acc, terms[i]);
  return acc;
}

const UOp* SymbolicRewriter::Prod(const std::vector<const UOp*>& terms) {
  const UOp* acc = terms.front();
  const Op op = IsBoolNode(acc) ? Op::kAnd : Op::kMul;
  for (size_t i = 1; i < terms.size(); ++i) acc = Alu(op, acc, terms[i]);
  return acc;
}

const UOp* SymbolicRewriter::PySum(const std::vector<const UOp*>& terms, const UOp* like) {
  if (terms.empty()) return ConstLike(like, 0);
  const UOp* acc = CAdd(0, terms.front());
  for (size_t i = 1; i < terms.size(); ++i) acc = Add(acc, terms[i]);
  return acc;
}

const UOp* SymbolicRewriter::PyProd(const std::vector<const UOp*>& terms, const UOp* like) {
  if (terms.empty()) return ConstLike(like, 1);
  const UOp* acc = CMul(1, terms.front());
  for (size_t i = 1; i < terms.size(); ++i) acc = Mul(acc, terms[i]);
  return acc;
}

// ---- UOp helpers ------------------------------------------------------------------------------

void SymbolicRewriter::SplitUOp(const UOp* n, Op sep, std::vector<const UOp*>& out) {
  // Left to right, without recursion (a client's sum may be thousands of terms deep).
  std::vector<const UOp*> stack = {n};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op() != sep) {
      out.push_back(u);
      continue;
    }
    for (auto it = u->src().rbegin(); it != u->src().rend(); ++it) stack.push_back(*it);
  }
}

bool SymbolicRewriter::ConstFactor(const UOp* n, Int128& out, int depth) {
  if (depth > kMaxDepth) return false;
  if (n->op() == Op::kConst) {
    if (!IsIntCvar(n)) return false;
    out = CInt(n);
    return true;
  }
  if (n->op() == Op::kAdd) {
    Int128 a, b;
    if (!ConstFactor(n->src(0), a, depth + 1) || !ConstFactor(n->src(1), b, depth + 1)) {
      return false;
    }
    out = Gcd(a, b);
    return true;
  }
  if (n->op() == Op::kMul) {
    if (n->src(0)->op() == Op::kConst) return ConstFactor(n->src(0), out);
    if (n->src(1)->op() == Op::kConst) return ConstFactor(n->src(1), out);
  }
  out = 1;
  return true;
}

const UOp* SymbolicRewriter::Divides(const UOp* n, Int128 v, int depth) {
  if (v == 1) return n;
  if (v == 0 || depth > kMaxDepth) return nullptr;
  if (n->op() == Op::kConst) {
    if (!IsIntCvar(n)) return nullptr;
    return FloorMod(CInt(n), v) == 0 ? ConstLike(n, FloorDiv(CInt(n), v)) : nullptr;
  }
  if (n->op() == Op::kAdd) {
    const UOp* d0 = Divides(n->src(0), v, depth + 1);
    if (d0 == nullptr) return nullptr;
    const UOp* d1 = Divides(n->src(1), v, depth + 1);
    return d1 == nullptr ? nullptr : Add(d0, d1);
  }
  if (n->op() == Op::kMul) {
    if (const UOp* d0 = Divides(n->src(0), v, depth + 1)) return Mul(d0, n->src(1));
    if (const UOp* d1 = Divides(n->src(1), v, depth + 1)) return Mul(n->src(0), d1);
  }
  return nullptr;
}

const UOp* SymbolicRewriter::DivideExact(const UOp* n, const UOp* v, int depth) {
  if (n == v) return ConstLike(n, 1);
  if (depth > kMaxDepth) return nullptr;
  if (v->op() == Op::kConst) return IsIntCvar(v) ? Divides(n, CInt(v)) : nullptr;
  if (n->op() == Op::kAdd) {
    const UOp* s0 = DivideExact(n->src(0), v, depth + 1);
    if (s0 == nullptr) return nullptr;
    const UOp* s1 = DivideExact(n->src(1), v, depth + 1);
    return s1 == nullptr ? nullptr : Add(s0, s1);
  }
  if (n->op() == Op::kMul) {
    auto pop = [](const UOp* u, const UOp*& fac, Int128& c) {
      if (u->op() == Op::kMul && IsIntCvar(u->src(1))) {
        fac = u->src(0);
        c = CInt(u->src(1));
      } else {
        fac = u;
        c = 1;
      }
    };
    const UOp *fac, *div_fac;
    Int128 c, div_c;
    pop(n, fac, c);
    pop(v, div_fac, div_c);
    if (div_c == 0) return nullptr;
    // collections.Counter(fac factors) minus Counter(div_fac factors), in insertion order.
    std::vector<std::pair<const UOp*, int>> count;
    auto find = [&](const UOp* u) {
      return std::find_if(count.begin(), count.end(), [&](auto& e) { return e.first == u; });
    };
    std::vector<const UOp*> parts;
    SplitUOp(fac, Op::kMul, parts);
    for (const UOp* u : parts) {
      if (auto it = find(u); it != count.end()) {
        ++it->second;
      } else {
        count.push_back({u, 1});
      }
    }
    parts.clear();
    SplitUOp(div_fac, Op::kMul, parts);
    for (const UOp* u : parts) {
      if (auto it = find(u); it != count.end()) {
        --it->second;
      } else {
        count.push_back({u, -1});
      }
    }
    if (FloorMod(c, div_c) != 0) return nullptr;
    std::vector<const UOp*> elements;
    for (auto& [u, k] : count) {
      if (k < 0) return nullptr;
      for (int i = 0; i < k; ++i) elements.push_back(u);
    }
    elements.push_back(ConstLike(n, FloorDiv(c, div_c)));
    return PyProd(elements, n);
  }
  return nullptr;
}

// UOp.gcd(*uops), simplified.
const UOp* SymbolicRewriter::GcdOf(const std::vector<const UOp*>& uops) {
  std::vector<const UOp*> terms;
  Int128 g = 0;
  for (const UOp* u : uops) {
    Int128 f;
    if (!ConstFactor(u, f)) return nullptr;
    const UOp* t = Divides(u, f);
    if (t == nullptr) return nullptr;
    terms.push_back(t);
    g = Gcd(g, f);
  }
  // The intersection of the terms' factor multisets, in the first term's order.
  std::vector<std::pair<const UOp*, int>> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<const UOp*> parts;
    SplitUOp(terms[i], Op::kMul, parts);
    std::vector<std::pair<const UOp*, int>> here;
    for (const UOp* u : parts) {
      auto it = std::find_if(here.begin(), here.end(), [&](auto& e) { return e.first == u; });
      if (it != here.end()) {
        ++it->second;
      } else {
        here.push_back({u, 1});
      }
    }
    if (i == 0) {
      count = here;
      continue;
    }
    std::vector<std::pair<const UOp*, int>> both;
    for (auto& [u, k] : count) {
      auto it = std::find_if(here.begin(), here.end(), [&](auto& e) { return e.first == u; });
      if (it != here.end() && std::min(k, it->second) > 0) {
        both.push_back({u, std::min(k, it->second)});
      }
    }
    count = both;
  }
  std::vector<const UOp*> elements;
  for (auto& [u, k] : count) {
    for (int i = 0; i < k; ++i) elements.push_back(u);
  }
  elements.push_back(ConstLike(terms[0], g));
  return Simplify(PyProd(elements, terms[0]));
}

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

// ---- the rewrite engine -------------------------------------------------------------------------

SymbolicRewriter::SymbolicRewriter(Graph& graph)
    : g_(graph),
      max_steps_(kMinSteps + kStepsPerNode * static_cast<int64_t>(graph.size())),
      max_nodes_(kMinNodes + kNodesPerNode * static_cast<int64_t>(graph.size())) {}

bool SymbolicRewriter::Step() {
  if (!status_.ok()) return false;
  if (++steps_ > max_steps_ || static_cast<int64_t>(g_.size()) > max_nodes_) {
    status_ = absl::ResourceExhaustedError(absl::StrCat(
        "symbolic rewrite did not settle within ", steps_, " steps and ", g_.size(), " nodes"));
    return false;
  }
  return true;
}

const UOp* SymbolicRewriter::Rewrite(const UOp* root, const Rule& rule, Map& replace) {
  // tinygrad's RewriteContext.unified_rewrite, top-down: stage 0 queues the sources, stage 1
  // rebuilds the node from rewritten sources (or applies the rules when none changed), stage 2
  // links the node to the result of rewriting what it became.
  struct Item {
    const UOp* n;
    int stage;
    const UOp* new_n;
  };
  std::deque<Item> stack = {{root, 0, root}};
  absl::flat_hash_set<const UOp*> on_stack = {root};
  while (!stack.empty()) {
    if (!Step()) return root;
    Item it = stack.back();
    stack.pop_back();
    if (replace.contains(it.n)) continue;
    if (it.stage == 0) {
      stack.push_back({it.n, 1, it.new_n});
      for (auto s = it.new_n->src().rbegin(); s != it.new_n->src().rend(); ++s) {
        if (!on_stack.insert(*s).second) continue;
        stack.push_back({*s, 0, *s});
      }
    } else if (it.stage == 1) {
      std::vector<const UOp*> src;
      bool ready = true;
      for (const UOp* s : it.new_n->src()) {
        auto found = replace.find(s);
        if (found == replace.end()) {
          stack.push_front(it);
          ready = false;
          break;
        }
        src.push_back(found->second);
      }
      if (!ready) continue;
      const UOp* next;
      if (std::equal(src.begin(), src.end(), it.new_n->src().begin(), it.new_n->src().end())) {
        next = rule(it.new_n);
        if (!status_.ok()) return root;
        if (next == nullptr || next == it.new_n) {
          replace[it.n] = it.new_n;
          continue;
        }
      } else {
        next = g_.Make(it.new_n->op(), it.new_n->dtype(), std::move(src), it.new_n->arg());
      }
      stack.push_back({it.n, 2, next});
      stack.push_back({next, 0, next});
    } else {
      auto found = replace.find(it.new_n);
      if (found == replace.end()) {
        stack.push_front(it);
      } else {
        replace[it.n] = found->second;
      }
    }
  }
  return replace.at(root);
}

const UOp* SymbolicRewriter::Simplify(const UOp* root) {
  if (root->op() == Op::kConst) return root;
  return Rewrite(
      root, [this](const UOp* n) { return SymbolicRule(n); }, symbolic_memo_);
}

const UOp* SymbolicRewriter::Sym(const UOp* root) {
  return Rewrite(
      root,
      [this](const UOp* n) {
        if (const UOp* r = SymRule(n)) return r;
        return FlattenRangeRule(n);
      },
      sym_memo_);
}

const UOp* SymbolicRewriter::Substitute(const UOp* root, const Map& map) {
  Map done;
  bool any = false;
  for (const auto& [k, v] : map) any |= k != v;
  if (!any) return root;
  for (const UOp* n : TinyToposort({root})) {
    if (auto it = map.find(n); it != map.end()) {
      done[n] = it->second;
      continue;
    }
    std::vector<const UOp*> src;
    bool changed = false;
    for (const UOp* s : n->src()) {
      src.push_back(done.at(s));
      changed |= src.back() != s;
    }
    done[n] = changed ? g_.Make(n->op(), n->dtype(), std::move(src), n->arg()) : n;
  }
  return done.at(root);
}

const UOp* SymbolicRewriter::FlattenRangeRule(const UOp* n) {
  const int off = RangeStart(n->op());
  if (off < 0 || static_cast<int>(n->num_src()) <= off) return nullptr;
  std::vector<const UOp*> rngs(n->src().begin() + off, n->src().end());
  std::vector<const UOp*> src(n->src().begin(), n->src().begin() + off);
  for (const UOp* u : TinyToposort(rngs)) {
    if (u->op() == Op::kRange) src.push_back(u);
  }
  if (std::equal(src.begin(), src.end(), n->src().begin(), n->src().end())) return nullptr;
  return g_.Make(n->op(), n->dtype(), std::move(src), n->arg());
}

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

const UOp* SymbolicRewriter::SymbolicRule(const UOp* n) {
  if (!Step()) return nullptr;
  const Op op = n->op();
  const DType& dt = n->dtype();
  const bool binary = IsBinaryAlu(op);
  const bool nfloat = IsFloatNode(n);
  const UOp *cond, *x, *inv;
  const UOp* r = nullptr;
#define UOPD_TRY(expr) \
  if ((r = (expr)) != nullptr) return r

  // ---- propagate_invalid: Invalid index arithmetic stays Invalid, the gate moves outward.
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

  // ---- symbolic_simple: self folding
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
  if (op == Op::kAdd) {
    // Variations of (x%c)+(x//c)*c = x.
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
  // ---- zero folding
  if (op == Op::kCmplt && n->src(0) == n->src(1)) return ConstLike(n, 0);
  if (op == Op::kMod && n->src(0) == n->src(1)) return ConstLike(n->src(0), 0);
  if (op == Op::kXor && n->src(0) == n->src(1)) return ConstLike(n->src(0), 0);
  if (op == Op::kCmpne && n->src(0) == n->src(1) && IsIntBoolIndex(n->src(0))) {
    return ConstLike(n, 0);
  }
  // ---- constant folding
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
  // ---- cast/bitcast
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
  // ---- threefry: 64-bit packing of two 32-bit halves
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
  // ---- simple where folding
  if (op == Op::kWhere) {
    if (n->src(1) == n->src(2)) return n->src(1);
    if (IsCvar(n->src(0))) return Truthy(n->src(0)) ? n->src(1) : n->src(2);
    if (n->src(1)->op() == Op::kWhere && n->src(1)->src(2) == n->src(2)) {
      return Where(Alu(Op::kAnd, n->src(0), n->src(1)->src(0)), n->src(1)->src(1), n->src(2));
    }
  }

  // ---- commutative: INDEX operands in tinygrad's order (UOp.tuplize)
  if (IsCommutative(op) && IsIndex(n) && TupLess(n->src(1), n->src(0))) {
    return g_.Make(op, dt, {n->src(1), n->src(0)}, n->arg());
  }

  // ---- symbolic: boolean algebra
  if (op == Op::kOr) {
    UOPD_TRY(Perm2(n, [&](const UOp* a, const UOp* b) -> const UOp* {
      if (!IsBoolNode(a) || b->op() != Op::kCmpne) return nullptr;
      return Perm2(b, [&](const UOp* a2, const UOp* t) -> const UOp* {
        return a2 == a && ConstIs(t, 1) ? ConstLike(a, 1) : nullptr;
      });
    }));
  }
  // ---- combine terms (integers: for floats these change the rounding)
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
  // ---- where folding
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
  // ---- two stage ALU folding: (x op c1) op c2 -> x op (c1 op c2)
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
  // ---- lt
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
  // ---- move add/mul consts to the end (integers)
  if ((op == Op::kAdd || op == Op::kMul) && !nfloat) {
    UOPD_TRY(Perm2(n, [&](const UOp* inner, const UOp* y) -> const UOp* {
      return WithConst(inner, op, [&](const UOp* xx, const UOp* c1) -> const UOp* {
        return Alu(op, Alu(op, xx, y), c1);
      });
    }));
  }
  // ---- generic lt folding
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
  // ---- cast folding
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

  // ---- div_and_mod_symbolic: fast rules
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
  // ---- slow rules
  if ((op == Op::kIdiv || op == Op::kMod) && IsIndex(n)) UOPD_TRY(FoldDivMod(n));
  if (op == Op::kMod && IsIndex(n->src(0))) {
    if (VMax(n->src(0)) <= 0) return Neg(Alu(Op::kMod, Neg(n->src(0)), n->src(1)));
    if (VMax(n->src(1)) < 0) return Alu(Op::kMod, n->src(0), Neg(n->src(1)));
  }
#undef UOPD_TRY
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
    const UOp* x_peeled = x;
    Int128 konst = 0;
    if (x->op() == Op::kAdd && IsIntCvar(x->src(1))) {
      x_peeled = x->src(0);
      konst = CInt(x->src(1));
    }
    std::vector<const UOp*> uops_no_const;
    SplitUOp(x_peeled, Op::kAdd, uops_no_const);
    std::vector<Int128> factors;
    std::vector<const UOp*> terms;
    if (IsIntCvar(y) && CInt(y) > 0) {
      const Int128 c = CInt(y);
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
            result = Alu(Op::kMod, new_x, y);
            return;
          }
        }
      }
      for (const UOp* u : uops_no_const) {
        Int128 f;
        if (!ConstFactor(u, f) || f == 0) return;
        const UOp* t = Divides(u, f);
        if (t == nullptr) return;
        factors.push_back(f);
        terms.push_back(t);
      }
      // fold_binary_numerator: one term that takes two values
      if (terms.size() == 1 && VMax(terms[0]) - VMin(terms[0]) == 1) {
        const UOp* v = terms[0];
        const Int128 a0 = factors[0] * VMin(v) + konst, a1 = factors[0] * VMax(v) + konst;
        const Int128 y1 = is_mod ? CMod(a0, c) : CDiv(a0, c);
        const Int128 y2 = is_mod ? CMod(a1, c) : CDiv(a1, c);
        result = AddC(CMul(y2 - y1, AddC(v, -VMin(v))), y1);
        return;
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
            result = AddC(rem, -(FloorDiv(VMin(rem), c) * c));
            return;
          }
          std::vector<const UOp*> quot;
          for (size_t i = 0; i < factors.size(); ++i) {
            quot.push_back(CMul(FloorDiv(factors[i] - rems[i], c), terms[i]));
          }
          result = AddC(PySum(quot, x),
                        FloorDiv(konst - FloorMod(konst, c) + FloorDiv(VMin(rem), c) * c, c));
          return;
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
          if (divided == nullptr) return;
          const UOp* new_x = AddC(Simplify(divided), FloorDiv(FloorMod(konst, c), g));
          if (VMin(new_x) >= 0) {
            const UOp* ret = Alu(d->op(), new_x, ConstLike(x, FloorDiv(c, g)));
            result =
                is_mod ? AddC(Mul(ret, gcd), FloorMod(konst, g)) : AddC(ret, FloorDiv(konst, c));
            return;
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
            result = Alu(Op::kIdiv, newxs, ConstLike(newxs, FloorDiv(c, div)));
            return;
          }
        }
      }
    }
    // divide_by_gcd: x//y -> (x//gcd)//(y//gcd)
    std::vector<const UOp*> all_uops = uops_no_const;
    if (konst != 0) all_uops.push_back(ConstLike(x, konst));
    {
      std::vector<const UOp*> with_y = all_uops;
      with_y.push_back(y);
      const UOp* gcd = GcdOf(with_y);
      if (gcd == nullptr) return;
      if (!(IsIntCvar(gcd) && CInt(gcd) == 1)) {
        const UOp* a = DivideExact(x, gcd);
        const UOp* b = DivideExact(y, gcd);
        if (a == nullptr || b == nullptr) return;
        const UOp* ret = Alu(d->op(), a, b);
        result = is_mod ? Mul(ret, gcd) : ret;
        return;
      }
    }
    // factor_remainder: (d*x+y)//d -> x+y//d (not for a divisor that may be 0: x//0 is 0)
    if (yb.lo <= 0 || xb.lo < 0) return;
    std::vector<const UOp*> quo, rem;
    for (const UOp* u : all_uops) {
      Int128 cf;
      if (const UOp* q = DivideExact(u, y)) {
        quo.push_back(q);
      } else if (is_mod && IsIntCvar(y) && ConstFactor(u, cf) && cf != 0 &&
                 FloorMod(cf, CInt(y)) != cf) {
        const UOp* t = Divides(u, cf);
        if (t == nullptr) return;
        rem.push_back(MulC(t, FloorMod(cf, CInt(y))));
        quo.push_back(ConstLike(u, 0));
      } else {
        rem.push_back(u);
      }
    }
    if (quo.empty()) return;
    const UOp* zero = ConstLike(x, 0);
    const UOp* new_x = rem.empty() ? CAdd(0, zero) : Add(PySum(rem, x), zero);
    if (VMin(new_x) < 0) return;
    result = is_mod ? Alu(Op::kMod, new_x, y) : Add(Alu(Op::kIdiv, new_x, y), PySum(quo, x));
  }();
  divmod_memo_[d] = result;
  return result;
}

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
