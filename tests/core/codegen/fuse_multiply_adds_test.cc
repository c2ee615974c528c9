// FuseMultiplyAdds on small linear programs: which additions absorb their product, and which
// keep two roundings (what the fused programs compute is checked end to end in
// cpu_backend_test and daemon_test).
#include "core/codegen/fuse_multiply_adds.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace uopd {
namespace {

DType T(Scalar s, int count = 1) {
  DType d = DType::Of(s);
  d.count = count;
  return d;
}

struct Builder {
  int Add(Instr instr) {
    program.instrs.push_back(std::move(instr));
    return static_cast<int>(program.instrs.size()) - 1;
  }
  int Var(Scalar s, int count = 1) {
    return Add(Instr{.kind = InstrKind::kVar, .dtype = T(s, count), .var = 0});
  }
  int Alu(Op op, Scalar s, std::vector<int> src, int count = 1) {
    return Add(
        Instr{.kind = InstrKind::kAlu, .op = op, .dtype = T(s, count), .src = std::move(src)});
  }
  int Const(Scalar s, int64_t v) {
    return Add(Instr{.kind = InstrKind::kConst, .dtype = T(s), .arg = Arg::I64(v)});
  }
  LinearProgram program;
};

std::vector<std::string> Shape(const LinearProgram& program) {
  std::vector<std::string> shape;
  for (const Instr& in : program.instrs) {
    std::string s(InstrKindName(in.kind));
    if (in.kind == InstrKind::kAlu || in.kind == InstrKind::kAccUpdate)
      s = absl::StrCat(s, ":", OpName(in.op));
    shape.push_back(s);
  }
  return shape;
}

TEST(FuseMultiplyAdds, AnAddAbsorbsAProductUsedNowhereElse) {
  Builder b;
  const int x = b.Var(Scalar::kFloat32, 8);
  const int y = b.Var(Scalar::kFloat32, 8);
  const int product = b.Alu(Op::kMul, Scalar::kFloat32, {x, y}, 8);
  b.Alu(Op::kAdd, Scalar::kFloat32, {y, product}, 8);  // the product on either side
  const LinearProgram out = FuseMultiplyAdds(b.program);
  EXPECT_EQ(Shape(out), (std::vector<std::string>{"var", "var", "alu:MULACC"}));
  EXPECT_EQ(out.instrs[2].src, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(out.instrs[2].dtype.count, 8);
}

TEST(FuseMultiplyAdds, AnAccumulationAbsorbsItsProduct) {
  Builder b;
  const int x = b.Var(Scalar::kFloat64);
  const int zero = b.Const(Scalar::kFloat64, 0);
  const int acc =
      b.Add(Instr{.kind = InstrKind::kAccDefine, .dtype = T(Scalar::kFloat64), .src = {zero}});
  const int product = b.Alu(Op::kMul, Scalar::kFloat64, {x, x});
  b.Add(Instr{.kind = InstrKind::kAccUpdate,
              .op = Op::kAdd,
              .dtype = T(Scalar::kFloat64),
              .src = {acc, product}});
  const LinearProgram out = FuseMultiplyAdds(b.program);
  EXPECT_EQ(Shape(out),
            (std::vector<std::string>{"var", "const", "acc_define", "acc_update:MULACC"}));
  EXPECT_EQ(out.instrs[3].src, (std::vector<int>{2, 0, 0}));
}

TEST(FuseMultiplyAdds, KeepsTwoRoundingsWhereAFusionWouldCostOrChangeMore) {
  Builder b;
  const int x = b.Var(Scalar::kFloat32);
  // A product used twice: both uses would compute it again.
  const int shared = b.Alu(Op::kMul, Scalar::kFloat32, {x, x});
  b.Alu(Op::kAdd, Scalar::kFloat32, {shared, x});
  b.Alu(Op::kAdd, Scalar::kFloat32, {shared, x});
  // Integers and emulated small floats have no fused form.
  const int i = b.Var(Scalar::kInt32);
  b.Alu(Op::kAdd, Scalar::kInt32, {b.Alu(Op::kMul, Scalar::kInt32, {i, i}), i});
  const int h = b.Var(Scalar::kFloat16);
  b.Alu(Op::kAdd, Scalar::kFloat16, {b.Alu(Op::kMul, Scalar::kFloat16, {h, h}), h});
  // A product outside a loop stays there: fused into an add inside it, it would run every
  // iteration.
  const int outside = b.Alu(Op::kMul, Scalar::kFloat32, {x, x});
  const int begin = b.Add(Instr{.kind = InstrKind::kLoopBegin,
                                .dtype = T(Scalar::kIndex),
                                .src = {b.Const(Scalar::kIndex, 0), b.Const(Scalar::kIndex, 4)}});
  b.Alu(Op::kAdd, Scalar::kFloat32, {outside, x});
  b.Add(Instr{.kind = InstrKind::kLoopEnd, .src = {begin}});
  const LinearProgram out = FuseMultiplyAdds(b.program);
  EXPECT_EQ(Shape(out), Shape(b.program));
}

TEST(FuseMultiplyAdds, RenumbersWhatFollowsAnAbsorbedProduct) {
  Builder b;
  const int x = b.Var(Scalar::kFloat32);
  const int sum = b.Alu(Op::kAdd, Scalar::kFloat32, {b.Alu(Op::kMul, Scalar::kFloat32, {x, x}), x});
  b.Alu(Op::kMul, Scalar::kFloat32, {sum, x});
  const LinearProgram out = FuseMultiplyAdds(b.program);
  EXPECT_EQ(Shape(out), (std::vector<std::string>{"var", "alu:MULACC", "alu:MUL"}));
  EXPECT_EQ(out.instrs[2].src, (std::vector<int>{1, 0}));
}

}  // namespace
}  // namespace uopd
