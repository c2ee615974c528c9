// Constants mean the same on every backend: DecodeConst decides their bits once.
#include "core/codegen/const_value.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace uopd {
namespace {

Instr Constant(Scalar scalar, Arg arg) {
  return Instr{.kind = InstrKind::kConst, .dtype = DType::Of(scalar), .arg = std::move(arg)};
}

TEST(ConstValue, IntegersWrapToTheirWidth) {
  // tinygrad keeps UINT32 -3: the two's-complement wrap.
  EXPECT_EQ(DecodeConst(Constant(Scalar::kUint32, Arg::I64(-3)), 64).bits, 4294967293u);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kInt8, Arg::I64(200)), 64).as_int(), -56);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kIndex, Arg::I64(int64_t{1} << 32)), 32).as_int(), 0);
  Arg big = Arg::I64(-1);
  big.kind = ArgKind::kU64;  // 2^64 - 1
  EXPECT_EQ(DecodeConst(Constant(Scalar::kUint64, big), 64).bits, ~uint64_t{0});
  EXPECT_EQ(DecodeConst(Constant(Scalar::kInt64, big), 64).as_int(), -1);
  // A float argument truncates; NaN is 0 (it was undefined behaviour in both renderers).
  EXPECT_EQ(DecodeConst(Constant(Scalar::kInt32, Arg::F64(-2.75)), 64).as_int(), -2);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kInt32, Arg::F64(std::nan(""))), 64).as_int(), 0);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kInt32, Arg::F64(INFINITY)), 64).as_int(), 0);
}

TEST(ConstValue, FloatsAreTheirFormatsBitsNaNsIncluded) {
  const double negative_nan = -std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFloat32, Arg::F64(negative_nan)), 64).bits,
            0xffc00000u);  // the sign kept
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFloat64, Arg::F64(negative_nan)), 64).bits,
            0xfff8000000000000u);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFloat32, Arg::F64(0.1)), 64).bits, 0x3dcccccdu);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFloat16, Arg::F64(65520.0)), 64).bits, 0x7c00u);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kBfloat16, Arg::I64(1)), 64).bits, 0x3f80u);
  Arg huge = Arg::I64(-1);
  huge.kind = ArgKind::kU64;  // 2^64 - 1 is unsigned, not -1
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFloat64, huge), 64).as_double(), 18446744073709551616.0);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFloat32, Arg::Bool(true)), 64).bits, 0x3f800000u);
}

TEST(ConstValue, AnFp8E5M2InfinityStaysOneWhereFiniteValuesSaturate) {
  // tinygrad compares with an infinity constant at float precision (Tensor.isinf on fp8e5m2):
  // the constant must stay 0x7c though a conversion of infinity saturates to 0x7b.
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E5M2, Arg::F64(INFINITY)), 64).bits, 0x7cu);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E5M2, Arg::F64(-INFINITY)), 64).bits, 0xfcu);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E5M2, Arg::F64(1e6)), 64).bits, 0x7bu);
  // e4m3 has no infinity: -inf, a MAX reduction's identity, is its lowest value.
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E4M3, Arg::F64(-INFINITY)), 64).bits, 0xfeu);
}

TEST(ConstValue, FnuzFp8ConstantsSaturateAndNanIsTheSignBit) {
  // No infinity in either fnuz type: -inf, a MAX reduction's identity, is the lowest value.
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E4M3Fnuz, Arg::F64(-INFINITY)), 64).bits, 0xffu);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E5M2Fnuz, Arg::F64(INFINITY)), 64).bits, 0x7fu);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E5M2Fnuz, Arg::F64(NAN)), 64).bits, 0x80u);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E4M3Fnuz, Arg::F64(-0.0)), 64).bits, 0x00u);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kFp8E4M3Fnuz, Arg::F64(1.0)), 64).bits, 0x40u);
}

TEST(ConstValue, BoolsAndLanes) {
  EXPECT_EQ(DecodeConst(Constant(Scalar::kBool, Arg::I64(2)), 64).bits, 1u);
  EXPECT_EQ(DecodeConst(Constant(Scalar::kBool, Arg::F64(0.0)), 64).bits, 0u);
  Instr lanes = Constant(Scalar::kInt16, Arg::I64(0));
  lanes.dtype.count = 3;
  lanes.arg.ints = {1, -1, 70000};
  EXPECT_EQ(DecodeConst(lanes, 64, 1).as_int(), -1);
  EXPECT_EQ(DecodeConst(lanes, 64, 2).as_int(), 70000 - 65536);
}

}  // namespace
}  // namespace uopd
