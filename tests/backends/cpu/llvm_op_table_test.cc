// The LLVM spelling of each op, shared by the writer's scalar and vector code: the choices that
// carry the IR's meaning (signedness, NaN behaviour of comparisons, bools as i1 logic).
#include "backends/cpu/llvm_op_table.h"

#include "gtest/gtest.h"

namespace uopd {
namespace {

DType T(Scalar s, int count = 1) {
  DType d = DType::Of(s);
  d.count = count;
  return d;
}

TEST(LlvmOpTable, IntegerDivisionAndShiftsFollowTheOperandsSignedness) {
  EXPECT_EQ(LlvmBinaryInstruction(Op::kIdiv, T(Scalar::kInt32)), "sdiv");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kIdiv, T(Scalar::kUint32)), "udiv");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kMod, T(Scalar::kIndex)), "srem");  // INDEX is signed
  EXPECT_EQ(LlvmBinaryInstruction(Op::kMod, T(Scalar::kUint8, 8)), "urem");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kShr, T(Scalar::kInt64)), "ashr");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kShr, T(Scalar::kUint64)), "lshr");
}

TEST(LlvmOpTable, BoolArithmeticIsLogicAndFloatsReassociateOnlyWhenAsked) {
  EXPECT_EQ(LlvmBinaryInstruction(Op::kAdd, T(Scalar::kBool)), "or");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kMul, T(Scalar::kBool, 4)), "and");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kAdd, T(Scalar::kFloat32)), "fadd");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kAdd, T(Scalar::kFloat32, 8), /*reassoc=*/true),
            "fadd reassoc");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kSub, T(Scalar::kFloat64), /*reassoc=*/true), "fsub");
  EXPECT_EQ(LlvmBinaryInstruction(Op::kMul, T(Scalar::kFloat16)), "fmul");  // computed in float
  EXPECT_EQ(LlvmBinaryInstruction(Op::kMax, T(Scalar::kFloat32)), "");      // two instructions
}

TEST(LlvmOpTable, ComparisonsAreOrderedButNotEqualIsTrueOnNaN) {
  EXPECT_EQ(LlvmComparison(Op::kCmplt, T(Scalar::kFloat32)), "fcmp olt");
  EXPECT_EQ(LlvmComparison(Op::kCmpeq, T(Scalar::kFloat64)), "fcmp oeq");
  EXPECT_EQ(LlvmComparison(Op::kCmpne, T(Scalar::kBfloat16)), "fcmp une");
  EXPECT_EQ(LlvmComparison(Op::kCmplt, T(Scalar::kInt8)), "icmp slt");
  EXPECT_EQ(LlvmComparison(Op::kCmplt, T(Scalar::kUint16)), "icmp ult");
  EXPECT_EQ(LlvmComparison(Op::kCmplt, T(Scalar::kBool)), "icmp ult");
  EXPECT_EQ(LlvmComparison(Op::kCmpne, T(Scalar::kInt32)), "icmp ne");
  EXPECT_EQ(LlvmGreaterThan(T(Scalar::kFloat32)), "fcmp ogt");
  EXPECT_EQ(LlvmGreaterThan(T(Scalar::kIndex)), "icmp sgt");
  EXPECT_EQ(LlvmGreaterThan(T(Scalar::kBool)), "icmp ugt");
}

}  // namespace
}  // namespace uopd
