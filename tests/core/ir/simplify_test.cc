// SimplifyIndexArithmetic: the rules the lowering relies on.
#include "core/ir/simplify.h"

#include "core/ir/printer.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

class SimplifyTest : public ::testing::Test {
 protected:
  const UOp* C(int64_t v) { return graph_.ConstInt(Scalar::kIndex, v); }
  const UOp* Bin(Op op, const UOp* a, const UOp* b) {
    return graph_.Make(op, DType::Of(Scalar::kIndex), {a, b});
  }
  const UOp* Range(int64_t end) {
    return graph_.Make(Op::kRange, DType::Of(Scalar::kIndex), {C(end)},
                       Arg::Range({next_axis_++}, AxisType::kLoop));
  }
  const UOp* Simplify(const UOp* node) {
    auto result = SimplifyIndexArithmetic(graph_, node);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : nullptr;
  }

  Graph graph_;
  int64_t next_axis_ = 0;
};

TEST_F(SimplifyTest, FoldsConstants) {
  EXPECT_EQ(Simplify(Bin(Op::kAdd, C(3), Bin(Op::kMul, C(4), C(5)))), C(23));
  EXPECT_EQ(Simplify(Bin(Op::kIdiv, C(-7), C(2))), C(-3)) << "IDIV truncates toward zero";
  EXPECT_EQ(Simplify(Bin(Op::kMod, C(-7), C(2))), C(-1)) << "MOD takes the dividend's sign";
}

TEST_F(SimplifyTest, RemovesIdentities) {
  const UOp* x = Range(10);
  EXPECT_EQ(Simplify(Bin(Op::kAdd, x, C(0))), x);
  EXPECT_EQ(Simplify(Bin(Op::kMul, C(1), x)), x);
  EXPECT_EQ(Simplify(Bin(Op::kIdiv, x, C(1))), x);
  EXPECT_EQ(Simplify(Bin(Op::kMod, x, C(1))), C(0));
  EXPECT_EQ(Simplify(Bin(Op::kMul, x, C(0))), C(0));
}

TEST_F(SimplifyTest, MergesNestedDivisionAndModulo) {
  const UOp* x = Bin(Op::kAdd, Bin(Op::kMul, Range(100), C(7)), Range(7));
  EXPECT_EQ(Simplify(Bin(Op::kIdiv, Bin(Op::kIdiv, x, C(3)), C(5))), Bin(Op::kIdiv, x, C(15)));
  EXPECT_EQ(Simplify(Bin(Op::kMod, Bin(Op::kMod, x, C(12)), C(4))), Bin(Op::kMod, x, C(4)));
  const UOp* kept = Bin(Op::kMod, Bin(Op::kMod, x, C(12)), C(5));
  EXPECT_EQ(Simplify(kept), kept) << "5 does not divide 12";
}

TEST_F(SimplifyTest, DecidesByValueRange) {
  const UOp* x = Range(8);
  EXPECT_EQ(Simplify(Bin(Op::kMod, x, C(8))), x) << "0 <= x < 8";
  EXPECT_EQ(Simplify(Bin(Op::kIdiv, x, C(8))), C(0));
  const UOp* lt = graph_.Make(Op::kCmplt, DType::Of(Scalar::kBool), {x, C(8)});
  EXPECT_EQ(Simplify(lt), graph_.Make(Op::kConst, DType::Of(Scalar::kBool), {}, Arg::Bool(true)));
  EXPECT_EQ(Simplify(Bin(Op::kIdiv, Bin(Op::kMul, x, C(4)), C(4))), x);
}

TEST_F(SimplifyTest, LeavesFloatArithmeticAlone) {
  const UOp* f = graph_.Make(Op::kConst, DType::Of(Scalar::kFloat32), {}, Arg::F64(0.0));
  const UOp* sum = graph_.Make(
      Op::kAdd, DType::Of(Scalar::kFloat32),
      {graph_.Make(Op::kDefineGlobal, DType::Ptr(Scalar::kFloat32, 4), {}, Arg::I64(0)), f});
  EXPECT_EQ(Simplify(sum), sum) << "x+0.0 is not x for x = -0.0";
}

}  // namespace
}  // namespace uopd
