#include "core/codegen/const_value.h"

#include <cmath>
#include <cstring>

#include "core/ir/value_range.h"
#include "core/util/kernel_support.h"

namespace uopd {
namespace {

// The argument as a real number, for float constants. A constant with `ints` holds one
// integer a lane (unsigned for kU64).
double RealOf(const Arg& arg, int lane) {
  if (!arg.ints.empty()) {
    return arg.kind == ArgKind::kU64 ? static_cast<double>(static_cast<uint64_t>(arg.ints[lane]))
                                     : static_cast<double>(arg.ints[lane]);
  }
  switch (arg.kind) {
    case ArgKind::kF64:
      return arg.f;
    case ArgKind::kU64:
      return static_cast<double>(static_cast<uint64_t>(arg.i));
    case ArgKind::kBool:
      return arg.b ? 1.0 : 0.0;
    default:
      return static_cast<double>(arg.i);
  }
}

// The argument as an integer, before wrapping: a float argument truncates toward zero, NaN is 0
// and what lies beyond 2^100 in magnitude is clamped there (it wraps to 0 at every width).
Int128 IntegerOf(const Arg& arg, int lane) {
  if (!arg.ints.empty()) {
    return arg.kind == ArgKind::kU64 ? Int128{static_cast<uint64_t>(arg.ints[lane])}
                                     : Int128{arg.ints[lane]};
  }
  switch (arg.kind) {
    case ArgKind::kU64:
      return Int128{static_cast<uint64_t>(arg.i)};
    case ArgKind::kBool:
      return Int128{arg.b};
    case ArgKind::kF64: {
      if (std::isnan(arg.f)) return 0;
      const double limit = std::ldexp(1.0, 100);
      return static_cast<Int128>(std::trunc(std::fmax(-limit, std::fmin(limit, arg.f))));
    }
    default:
      return Int128{arg.i};
  }
}

template <typename T>
uint64_t BitsOf(T value) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

Scalar SignedOfWidth(int bits) {
  return bits == 8    ? Scalar::kInt8
         : bits == 16 ? Scalar::kInt16
         : bits == 32 ? Scalar::kInt32
                      : Scalar::kInt64;
}

Scalar UnsignedOfWidth(int bits) {
  return bits == 8    ? Scalar::kUint8
         : bits == 16 ? Scalar::kUint16
         : bits == 32 ? Scalar::kUint32
                      : Scalar::kUint64;
}

}  // namespace

double ConstValue::as_double() const {
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

ConstValue DecodeConst(const Instr& constant, int index_bits, int lane) {
  const DType& d = constant.dtype;
  const Arg& arg = constant.arg;
  ConstValue value;
  if (d.scalar == Scalar::kBool) {
    value.bits = !arg.ints.empty()            ? arg.ints[lane] != 0
                 : arg.kind == ArgKind::kBool ? arg.b
                 : arg.kind == ArgKind::kF64  ? arg.f != 0
                                              : arg.i != 0;
    return value;
  }
  if (IsFloat(d.scalar)) {
    const double v = RealOf(arg, lane);
    switch (d.scalar) {
      case Scalar::kFloat64:
        value.bits = BitsOf(v);
        break;
      case Scalar::kFloat32:
        value.bits = BitsOf(static_cast<float>(v));
        break;
      case Scalar::kFloat16:
        value.bits = uopd_f64_to_f16(v);
        break;
      case Scalar::kBfloat16:
        value.bits = uopd_f64_to_bf16(v);
        break;
      case Scalar::kFp8E4M3:
        // No infinity: +-inf is +-448, which is what a MAX reduction's identity (-inf) needs.
        // tinygrad makes an infinity constant NaN here (float_to_fp8), so its comparisons with
        // +-inf differ (Tensor.isinf is true for +-448 on UOPD, false on tinygrad's devices).
        value.bits = uopd_f64_to_fp8e4m3(v);
        break;
      case Scalar::kFp8E4M3Fnuz:  // no infinity either: saturates as e4m3 does
        value.bits = uopd_f64_to_fp8e4m3fnuz(v);
        break;
      case Scalar::kFp8E5M2Fnuz:
        value.bits = uopd_f64_to_fp8e5m2fnuz(v);
        break;
      default:
        // A constant infinity stays one (0x7c), though conversions saturate (kernel_support.h):
        // tinygrad compares with an infinity constant at float precision (Tensor.isinf).
        value.bits = std::isinf(v) ? (v > 0 ? 0x7cu : 0xfcu) : uopd_f64_to_fp8e5m2(v);
        break;
    }
    return value;
  }
  const int bits = d.scalar == Scalar::kIndex ? index_bits : ScalarItemSize(d.scalar) * 8;
  const bool is_signed = d.scalar == Scalar::kIndex || !IsUnsigned(d.scalar);
  const Int128 wrapped =
      WrapToDType(IntegerOf(arg, lane), is_signed ? SignedOfWidth(bits) : UnsignedOfWidth(bits));
  value.bits = is_signed ? static_cast<uint64_t>(static_cast<int64_t>(wrapped))
                         : static_cast<uint64_t>(wrapped);
  return value;
}

}  // namespace uopd
