#include "core/codegen/transcendental.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "core/ir/hash.h"

namespace uopd {
namespace {

struct FloatLayout {
  Scalar int_type;  // same width, signed
  int mantissa_bits;
  int exponent_bias;
  int exponent_mask;
};

FloatLayout LayoutOf(Scalar scalar) {
  switch (scalar) {
    case Scalar::kFloat16:
      return {Scalar::kInt16, 10, 15, 31};
    case Scalar::kFloat64:
      return {Scalar::kInt64, 52, 1023, 2047};
    default:
      return {Scalar::kInt32, 23, 127, 255};
  }
}

// float16 goes through float32, unlike tinygrad, whose float16 formula flushes exp2 below
// 2^-22 to zero (float16 holds down to 2^-24) and is 2.4 units in the last place off for log2.
bool DecomposedInPlace(Scalar scalar) {
  return scalar == Scalar::kFloat32 || scalar == Scalar::kFloat64;
}

// Building expressions in one graph, spelled as tinygrad's decompositions spell them.
class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  const UOp* F(DType dtype, double value) {
    return g_.Make(Op::kConst, dtype, {}, Arg::F64(value));
  }
  const UOp* I(DType dtype, int64_t value) {
    return g_.Make(Op::kConst, dtype, {}, Arg::I64(value));
  }
  const UOp* Alu(Op op, const UOp* a, const UOp* b) { return g_.Make(op, a->dtype(), {a, b}); }
  const UOp* Add(const UOp* a, const UOp* b) { return Alu(Op::kAdd, a, b); }
  const UOp* Sub(const UOp* a, const UOp* b) { return Alu(Op::kSub, a, b); }
  const UOp* Mul(const UOp* a, const UOp* b) { return Alu(Op::kMul, a, b); }
  const UOp* Lt(const UOp* a, const UOp* b) {
    return g_.Make(Op::kCmplt, DType::Of(Scalar::kBool), {a, b});
  }
  const UOp* Ne(const UOp* a, const UOp* b) {
    return g_.Make(Op::kCmpne, DType::Of(Scalar::kBool), {a, b});
  }
  const UOp* Where(const UOp* c, const UOp* a, const UOp* b) {
    return g_.Make(Op::kWhere, a->dtype(), {c, a, b});
  }
  const UOp* Cast(const UOp* a, Scalar to) { return g_.Make(Op::kCast, DType::Of(to), {a}); }
  const UOp* Bitcast(const UOp* a, Scalar to) { return g_.Make(Op::kBitcast, DType::Of(to), {a}); }
  const UOp* Reciprocal(const UOp* a) { return g_.Make(Op::kReciprocal, a->dtype(), {a}); }
  const UOp* Unary(Op op, const UOp* a) { return g_.Make(op, a->dtype(), {a}); }

  // Horner's rule from the highest coefficient: ((c0*x + c1)*x + c2)... (tinygrad's polyN after
  // its 0*x + c0 folds to c0).
  const UOp* Poly(const UOp* x, std::initializer_list<double> coefficients) {
    const UOp* acc = nullptr;
    for (double c : coefficients) {
      acc = acc == nullptr ? F(x->dtype(), c) : Add(Mul(acc, x), F(x->dtype(), c));
    }
    return acc;
  }

  // inf -> inf, -inf -> minus_inf, nan -> nan, anything else -> otherwise.
  const UOp* MapSpecials(const UOp* x, const UOp* inf, const UOp* minus_inf, const UOp* nan,
                         const UOp* otherwise) {
    const double kInf = std::numeric_limits<double>::infinity();
    return Where(Ne(x, F(x->dtype(), kInf)),
                 Where(Ne(x, x), nan, Where(Ne(x, F(x->dtype(), -kInf)), otherwise, minus_inf)),
                 inf);
  }

  // Round to the nearest integer, halves away from zero.
  const UOp* RoundToInt(const UOp* d) {
    const UOp* half = Where(Lt(d, F(d->dtype(), 0.0)), F(d->dtype(), -0.5), F(d->dtype(), 0.5));
    return Cast(Add(d, half), LayoutOf(d->dtype().scalar).int_type);
  }

  // 2^q as a float of `scalar`, for an integer q in the normal exponent range.
  const UOp* Pow2(const UOp* q, Scalar scalar) {
    FloatLayout layout = LayoutOf(scalar);
    const UOp* biased = Add(q, I(q->dtype(), layout.exponent_bias));
    return Bitcast(Mul(biased, I(q->dtype(), int64_t{1} << layout.mantissa_bits)), scalar);
  }

  // d * 2^e for d > 0 and not denormal, in two steps so that 2^e may leave the normal range.
  const UOp* Ldexp2(const UOp* d, const UOp* e) {
    const UOp* half = Alu(Op::kIdiv, e, I(e->dtype(), 2));
    return Mul(Mul(d, Pow2(half, d->dtype().scalar)), Pow2(Sub(e, half), d->dtype().scalar));
  }

  // d * 2^e for e a float holding an integer: adds e to d's exponent field.
  const UOp* Ldexp3(const UOp* d, const UOp* e) {
    FloatLayout layout = LayoutOf(d->dtype().scalar);
    const UOp* bits = Bitcast(d, layout.int_type);
    const UOp* shift = Mul(Cast(e, layout.int_type),
                           I(DType::Of(layout.int_type), int64_t{1} << layout.mantissa_bits));
    return Bitcast(Add(bits, shift), d->dtype().scalar);
  }

  // The unbiased exponent of a normal d >= 0.
  const UOp* Ilogb2(const UOp* d) {
    FloatLayout layout = LayoutOf(d->dtype().scalar);
    DType int_type = DType::Of(layout.int_type);
    const UOp* bits = Bitcast(d, layout.int_type);
    const UOp* field =
        Alu(Op::kAnd, Alu(Op::kIdiv, bits, I(int_type, int64_t{1} << layout.mantissa_bits)),
            I(int_type, layout.exponent_mask));
    return Sub(field, I(int_type, layout.exponent_bias));
  }

  const UOp* Exp2(const UOp* d) {
    const DType t = d->dtype();
    const double kInf = std::numeric_limits<double>::infinity();
    const double kNan = std::numeric_limits<double>::quiet_NaN();
    const UOp* zero = F(t, 0.0);
    const UOp* x = MapSpecials(d, zero, zero, zero, d);
    const UOp* q = RoundToInt(x);
    const UOp* s = Sub(x, Cast(q, t.scalar));
    const UOp* u =
        t.scalar == Scalar::kFloat64
            ? Poly(s,
                   {0.4434359082926529454e-9, 0.7073164598085707425e-8, 0.1017819260921760451e-6,
                    0.1321543872511327615e-5, 0.1525273353517584730e-4, 0.1540353045101147808e-3,
                    0.1333355814670499073e-2, 0.9618129107597600536e-2, 0.5550410866482046596e-1,
                    0.2402265069591012214e+0, 0.6931471805599452862e+0, 0.1000000000000000000e+1})
            : Poly(s, {0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1,
                       0.2402264476e+0, 0.6931471825e+0, 1.0});
    u = Ldexp2(u, q);
    double upper = 128, lower = -150;
    if (t.scalar == Scalar::kFloat64) upper = 1024, lower = -2000;
    if (t.scalar == Scalar::kFloat16) upper = 23, lower = -22;
    u = Where(Lt(d, F(t, upper)), u, F(t, kInf));  // d >= upper (and NaN, fixed below)
    u = Where(Lt(d, F(t, lower)), zero, u);
    return Where(Ne(d, d), F(t, kNan), u);
  }

  const UOp* Log2(const UOp* d) {
    const DType t = d->dtype();
    const double kInf = std::numeric_limits<double>::infinity();
    const double kNan = std::numeric_limits<double>::quiet_NaN();
    // Denormals are scaled into the normal range first.
    const int denormal_exp = t.scalar == Scalar::kFloat16 ? 10 : 64;
    const UOp* is_denormal = Lt(d, F(t, t.scalar == Scalar::kFloat16 ? 6.1e-5 : 1e-4));
    const UOp* a = Where(is_denormal, Mul(d, F(t, std::ldexp(1.0, denormal_exp))), d);
    const UOp* e = Cast(Ilogb2(Mul(a, F(t, 1.0 / 0.75))), t.scalar);
    const UOp* m = Ldexp3(a, Mul(e, F(t, -1.0)));
    e = Where(is_denormal, Sub(e, F(t, denormal_exp)), e);
    const UOp* one = F(t, 1.0);
    const UOp* x = Mul(Sub(m, one), Reciprocal(Add(m, one)));
    const UOp* x2 = Mul(x, x);
    const UOp* r;
    if (t.scalar == Scalar::kFloat64) {
      const UOp* p =
          Poly(x2, {0.2211941750456081490e+0, 0.2200768693152277689e+0, 0.2623708057488514656e+0,
                    0.3205977477944495502e+0, 0.4121985945485324709e+0, 0.5770780162997058982e+0,
                    0.96179669392608091449});
      r = Add(Add(Mul(p, Mul(x, x2)), e), Mul(x, F(t, 2.885390081777926774)));
    } else {
      const UOp* p = Poly(x2, {0.4374550283e+0, 0.5764790177e+0, 0.9618012905120});
      r = Add(Add(Mul(p, Mul(x, x2)), e), Mul(x, F(t, 2.8853900432586669922)));
      // The low part of 2/ln(2) underflows in float16.
      if (t.scalar == Scalar::kFloat32) r = Add(r, Mul(x, F(t, 3.2734474483568488616e-08)));
    }
    r = Where(Ne(d, F(t, kInf)), r, F(t, kInf));
    r = Where(Ne(d, F(t, 0.0)), r, F(t, -kInf));
    r = Where(Lt(d, F(t, -0.0)), F(t, kNan), r);
    // tinygrad ends with reciprocal(d) != -inf ? r : -inf, for targets where -0.0 == 0.0
    // fails; the reciprocal of a negative denormal overflows to -inf too, which made log2 of
    // those -inf instead of NaN. IEEE comparisons (above) already send -0.0 to -inf.
    return Where(Ne(d, d), F(t, kNan), r);
  }

  const UOp* Decompose(Op op, const UOp* d) {
    const Scalar scalar = d->dtype().scalar;
    if (!DecomposedInPlace(scalar)) {
      return Cast(Decompose(op, Cast(d, Scalar::kFloat32)), scalar);
    }
    return op == Op::kExp2 ? Exp2(d) : Log2(d);
  }

 private:
  Graph& g_;
};

bool IsDecomposed(const UOp* node) {
  return (node->op() == Op::kExp2 || node->op() == Op::kLog2) && node->dtype().count == 1 &&
         IsFloat(node->dtype().scalar);
}

}  // namespace

std::shared_ptr<const KernelAst> DecomposeTranscendentals(std::shared_ptr<const KernelAst> ast) {
  std::vector<const UOp*> order = Toposort(ast->root);
  if (std::none_of(order.begin(), order.end(), IsDecomposed)) return ast;
  auto out = std::make_shared<KernelAst>();
  Builder b(out->graph);
  absl::flat_hash_map<const UOp*, const UOp*> rebuilt;
  for (const UOp* node : order) {
    std::vector<const UOp*> src;
    for (const UOp* s : node->src()) src.push_back(rebuilt.at(s));
    rebuilt[node] = IsDecomposed(node)
                        ? b.Decompose(node->op(), src[0])
                        : out->graph.Make(node->op(), node->dtype(), std::move(src), node->arg());
  }
  out->root = rebuilt.at(ast->root);
  out->hash = ast->hash;  // code generation's form of the same kernel (as tinygrad_algebra)
  return out;
}

}  // namespace uopd
