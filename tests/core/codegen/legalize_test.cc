// Legalize decides the IR's semantics once for every backend: what it leaves for a renderer to
// spell is checked here on small linear programs (what the code computes is checked by the
// corpus and the random kernels against the reference interpreter, on both backends).
#include "core/codegen/legalize.h"

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
  int Var(Scalar s) { return Add(Instr{.kind = InstrKind::kVar, .dtype = T(s), .var = 0}); }
  LinearProgram program;
};

// The kinds (and ops, for ALU instructions) of `program`, one per instruction.
std::vector<std::string> Shape(const LinearProgram& program) {
  std::vector<std::string> shape;
  for (const Instr& in : program.instrs) {
    shape.push_back(in.kind == InstrKind::kAlu ? absl::StrCat("alu:", OpName(in.op))
                                               : std::string(InstrKindName(in.kind)));
  }
  return shape;
}

TEST(Legalize, ACastToBoolIsACompareWithZeroInTheSourceType) {
  Builder b;
  const int x = b.Var(Scalar::kFloat16);
  b.Add(Instr{.kind = InstrKind::kCast, .dtype = T(Scalar::kBool), .src = {x}});
  const LinearProgram out = Legalize(b.program);
  EXPECT_EQ(Shape(out), (std::vector<std::string>{"var", "const", "alu:CMPNE"}));
  EXPECT_EQ(out.instrs[1].dtype.scalar, Scalar::kFloat16);  // NaN != 0: true, as a cast says
  EXPECT_EQ(out.instrs[1].arg.i, 0);
  EXPECT_EQ(out.instrs[2].dtype.scalar, Scalar::kBool);
  EXPECT_EQ(out.instrs[2].src, (std::vector<int>{0, 1}));
}

TEST(Legalize, BitcastsToAndFromBoolOrIndexAreCasts) {
  Builder b;
  const int flag = b.Var(Scalar::kBool);
  const int byte =
      b.Add(Instr{.kind = InstrKind::kBitcast, .dtype = T(Scalar::kUint8), .src = {flag}});
  b.Add(Instr{.kind = InstrKind::kBitcast, .dtype = T(Scalar::kBool), .src = {byte}});
  const int index = b.Var(Scalar::kIndex);
  b.Add(Instr{.kind = InstrKind::kBitcast, .dtype = T(Scalar::kInt64), .src = {index}});
  const int word = b.Var(Scalar::kInt32);
  b.Add(Instr{.kind = InstrKind::kBitcast, .dtype = T(Scalar::kFloat32), .src = {word}});
  const LinearProgram out = Legalize(b.program);
  EXPECT_EQ(Shape(out), (std::vector<std::string>{"var", "cast", "const", "alu:CMPNE", "var",
                                                  "cast", "var", "bitcast"}));
}

TEST(Legalize, FloatToIntStartsFromFloat32Or64AndEndsSignedOrUint64) {
  Builder b;
  const int half = b.Var(Scalar::kFloat16);
  b.Add(Instr{.kind = InstrKind::kCast, .dtype = T(Scalar::kUint8), .src = {half}});
  const int single = b.Var(Scalar::kFloat32);
  b.Add(Instr{.kind = InstrKind::kCast, .dtype = T(Scalar::kInt32), .src = {single}});
  b.Add(Instr{.kind = InstrKind::kCast, .dtype = T(Scalar::kUint64), .src = {single}});
  const LinearProgram out = Legalize(b.program);
  // float16 -> float32 -> int64 -> uint8 (wrapping); the others as they were.
  EXPECT_EQ(Shape(out),
            (std::vector<std::string>{"var", "cast", "cast", "cast", "var", "cast", "cast"}));
  EXPECT_EQ(out.instrs[1].dtype.scalar, Scalar::kFloat32);
  EXPECT_EQ(out.instrs[2].dtype.scalar, Scalar::kInt64);
  EXPECT_EQ(out.instrs[3].dtype.scalar, Scalar::kUint8);
  EXPECT_EQ(out.instrs[3].src, (std::vector<int>{2}));
  EXPECT_EQ(out.instrs[6].src, (std::vector<int>{4}));
}

TEST(Legalize, MulaccIsAMultiplyThenAnAdd) {
  Builder b;
  const int x = b.Var(Scalar::kFloat32);
  b.Add(Instr{.kind = InstrKind::kAlu,
              .op = Op::kMulacc,
              .dtype = T(Scalar::kFloat32, 4),
              .src = {x, x, x}});
  const LinearProgram out = Legalize(b.program);
  EXPECT_EQ(Shape(out), (std::vector<std::string>{"var", "alu:MUL", "alu:ADD"}));
  EXPECT_EQ(out.instrs[2].src, (std::vector<int>{1, 0}));
  EXPECT_EQ(out.instrs[2].dtype.count, 4);
}

TEST(Legalize, ALoadFromAnEmptyBufferIsZero) {
  Builder b;
  b.program.globals = {BufferParam{0, DType::Of(Scalar::kFloat32), 0},
                       BufferParam{1, DType::Of(Scalar::kFloat32), 8}};
  b.program.buf_count = 2;
  const int i = b.Var(Scalar::kIndex);
  b.Add(Instr{.kind = InstrKind::kLoad, .dtype = T(Scalar::kFloat32), .src = {i}, .slot = 0});
  b.Add(Instr{.kind = InstrKind::kLoad, .dtype = T(Scalar::kFloat32), .src = {i}, .slot = 1});
  const LinearProgram out = Legalize(b.program);
  EXPECT_EQ(Shape(out), (std::vector<std::string>{"var", "const", "load"}));
  EXPECT_EQ(out.instrs[1].dtype.scalar, Scalar::kFloat32);
}

}  // namespace
}  // namespace uopd
