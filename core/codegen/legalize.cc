#include "core/codegen/legalize.h"

#include <algorithm>
#include <vector>

namespace uopd {
namespace {

bool IsSignedType(Scalar s) { return s == Scalar::kIndex || (IsInt(s) && !IsUnsigned(s)); }

class Legalizer {
 public:
  explicit Legalizer(const LinearProgram& in) : in_(in) {}

  LinearProgram Run() {
    out_ = in_;
    out_.instrs.clear();
    map_.assign(in_.instrs.size(), -1);
    for (size_t i = 0; i < in_.instrs.size(); ++i) map_[i] = Rewrite(in_.instrs[i]);
    return std::move(out_);
  }

 private:
  int Emit(Instr instr) {
    out_.instrs.push_back(std::move(instr));
    return static_cast<int>(out_.instrs.size()) - 1;
  }
  const DType& TypeOf(int new_index) const { return out_.instrs[new_index].dtype; }
  int Const(DType dtype, int64_t value, const UOp* origin) {
    return Emit(
        Instr{.kind = InstrKind::kConst, .dtype = dtype, .arg = Arg::I64(value), .origin = origin});
  }
  int Alu(Op op, DType dtype, std::vector<int> src, const UOp* origin) {
    return Emit(Instr{.kind = InstrKind::kAlu,
                      .op = op,
                      .dtype = dtype,
                      .src = std::move(src),
                      .origin = origin});
  }
  static DType BoolLike(const DType& d) {
    DType b = DType::Of(Scalar::kBool);
    b.count = d.count;
    return b;
  }
  int Bits(const DType& d) const {
    return d.scalar == Scalar::kIndex ? out_.index_bits : ScalarItemSize(d.scalar) * 8;
  }
  // The value of a (new) constant instruction in every lane, if it is one.
  std::optional<std::vector<int64_t>> ConstLanes(int i) const {
    const Instr* c = &out_.instrs[i];
    if (c->kind == InstrKind::kBroadcast) c = &out_.instrs[c->src[0]];
    if (c->kind != InstrKind::kConst) return std::nullopt;
    if (c->arg.kind != ArgKind::kI64 && c->arg.kind != ArgKind::kU64) return std::nullopt;
    if (!c->arg.ints.empty()) return c->arg.ints;
    return std::vector<int64_t>{c->arg.i};
  }

  static bool HasNoFixedBits(const DType& d) {
    return d.scalar == Scalar::kBool || d.scalar == Scalar::kIndex;
  }

  int Rewrite(const Instr& old) {
    Instr in = old;
    for (int& s : in.src) s = map_[s];
    if (in.kind == InstrKind::kBitcast &&
        (HasNoFixedBits(in.dtype) || HasNoFixedBits(TypeOf(in.src[0])))) {
      // bool <-> 8 bits: the byte's value; INDEX has no fixed width: its bits are its value.
      in.kind = InstrKind::kCast;
    }
    switch (in.kind) {
      case InstrKind::kAlu:
        if (in.op == Op::kIdiv || in.op == Op::kMod) return Divide(in);
        if (in.op == Op::kShl || in.op == Op::kShr) return Shift(in);
        if (in.op == Op::kMulacc) return MultiplyThenAdd(in);
        return Emit(in);
      case InstrKind::kCast:
        if (in.dtype.scalar == Scalar::kBool) return CastToBool(in);
        if (IsFloat(TypeOf(in.src[0]).scalar) && IsInt(in.dtype.scalar)) return FloatToInt(in);
        return Emit(in);
      case InstrKind::kLoad:
        // Never valid (the bounds check ran first), and there is no element 0 to read instead.
        if (out_.Global(in.slot).size == 0) return Const(in.dtype, 0, in.origin);
        if (in.dtype.scalar == Scalar::kBool) return LoadBool(in);
        return Emit(in);
      case InstrKind::kStore:
        if (in.dtype.scalar == Scalar::kBool) return StoreBool(in);
        return Emit(in);
      default:
        return Emit(in);
    }
  }

  int Divide(Instr in) {
    const DType d = in.dtype;
    const bool is_signed = IsSignedType(d.scalar);
    const int b = in.src[1];
    if (auto lanes = ConstLanes(b)) {
      const bool safe = std::none_of(lanes->begin(), lanes->end(),
                                     [&](int64_t v) { return v == 0 || (is_signed && v == -1); });
      if (safe) return Emit(in);
    }
    const UOp* o = in.origin;
    const int a = in.src[0];
    const int zero = Const(d, 0, o);
    const int by_zero = Alu(Op::kCmpeq, BoolLike(d), {b, zero}, o);
    int bad = by_zero, by_minus_one = -1;
    if (is_signed) {
      by_minus_one = Alu(Op::kCmpeq, BoolLike(d), {b, Const(d, -1, o)}, o);
      bad = Alu(Op::kOr, BoolLike(d), {by_zero, by_minus_one}, o);
    }
    in.src[1] = Alu(Op::kWhere, d, {bad, Const(d, 1, o), b}, o);
    int result = Emit(in);
    if (is_signed) {
      // x / -1 = -x (wrapping: MIN stays MIN); x % -1 = 0.
      const int minus_a = in.op == Op::kIdiv ? Alu(Op::kSub, d, {zero, a}, o) : zero;
      result = Alu(Op::kWhere, d, {by_minus_one, minus_a, result}, o);
    }
    return Alu(Op::kWhere, d, {by_zero, zero, result}, o);
  }

  int Shift(Instr in) {
    const DType d = in.dtype;
    int amount = in.src[1];
    const int bits = Bits(d);
    if (auto lanes = ConstLanes(amount)) {
      const bool in_range =
          std::all_of(lanes->begin(), lanes->end(), [&](int64_t v) { return v >= 0 && v < bits; });
      if (in_range && TypeOf(amount).scalar == d.scalar) return Emit(in);
    }
    if (TypeOf(amount).scalar != d.scalar) amount = CastTo(d.scalar, amount, in.origin);
    DType mask_type = TypeOf(amount);
    in.src[1] =
        Alu(Op::kAnd, mask_type, {amount, Const(mask_type, bits - 1, in.origin)}, in.origin);
    return Emit(in);
  }

  // a*b+c rounds twice, as written: never fused.
  int MultiplyThenAdd(Instr in) {
    const int product = Alu(Op::kMul, in.dtype, {in.src[0], in.src[1]}, in.origin);
    in.op = Op::kAdd;
    in.src = {product, in.src[2]};
    return Emit(in);
  }

  // x != 0 in x's type (NaN is true), lane by lane.
  int NotZero(int x, const UOp* origin) {
    const DType d = TypeOf(x);
    return Alu(Op::kCmpne, BoolLike(d), {x, Const(d, 0, origin)}, origin);
  }

  int CastToBool(const Instr& in) {
    if (TypeOf(in.src[0]).scalar == Scalar::kBool) return in.src[0];
    return NotZero(in.src[0], in.origin);
  }

  int CastTo(Scalar scalar, int src, const UOp* origin) {
    DType to = TypeOf(src);
    to.scalar = scalar;
    return Emit(Instr{.kind = InstrKind::kCast, .dtype = to, .src = {src}, .origin = origin});
  }

  // Float to int: from float32 or float64 only (a small float is widened first, exactly), and
  // to a narrower unsigned type through int64, wrapping (x86's conversion). What is left for a
  // renderer is a saturating conversion to a signed type or to uint64.
  int FloatToInt(Instr in) {
    if (IsNarrowFloat(TypeOf(in.src[0]).scalar)) {
      in.src[0] = CastTo(Scalar::kFloat32, in.src[0], in.origin);
    }
    if (IsUnsigned(in.dtype.scalar) && in.dtype.scalar != Scalar::kUint64) {
      in.src[0] = CastTo(Scalar::kInt64, in.src[0], in.origin);
    }
    return Emit(in);
  }

  int LoadBool(Instr in) {
    in.dtype.scalar = Scalar::kUint8;
    return NotZero(Emit(in), in.origin);
  }

  int StoreBool(Instr in) {
    in.src[1] = CastTo(Scalar::kUint8, in.src[1], in.origin);
    in.dtype.scalar = Scalar::kUint8;
    return Emit(in);
  }

  const LinearProgram& in_;
  LinearProgram out_;
  std::vector<int> map_;  // old instruction -> new
};

}  // namespace

LinearProgram Legalize(const LinearProgram& program) { return Legalizer(program).Run(); }

}  // namespace uopd
