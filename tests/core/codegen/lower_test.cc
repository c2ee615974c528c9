// The shared lowering: loop structure, reduction hoisting, index width, GPU grid mapping.
#include "core/codegen/lower.h"

#include "backends/cpu/cpu_device.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using testing::HostBuffer;
using v1::DType;
using v1::Node;

int MaxLoopDepth(const LinearProgram& program) {
  int depth = 0, deepest = 0;
  for (const Instr& in : program.instrs) {
    if (in.kind == InstrKind::kLoopBegin) deepest = std::max(deepest, ++depth);
    if (in.kind == InstrKind::kLoopEnd) --depth;
  }
  return deepest;
}

// out[i] = sum_j (x[i, j] - max_k x[i, k]) over a 3 x 4 matrix.
v1::Graph CenteredRowSum() {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 3);
  int i = g.Range(g.Index(3), 0);
  int x = g.Buffer(1, DType::FLOAT32, 12);
  int row = g.Node(Node::MUL, DType::INDEX, {i, g.Index(4)});
  int k = g.Range(g.Index(4), 2, v1::RangeArg::REDUCE);
  int max = g.Reduce(Node::MAX, DType::FLOAT32,
                     g.Load(x, g.Node(Node::ADD, DType::INDEX, {row, k})), {k});
  int j = g.Range(g.Index(4), 1, v1::RangeArg::REDUCE);
  int centered = g.Node(Node::SUB, DType::FLOAT32,
                        {g.Load(x, g.Node(Node::ADD, DType::INDEX, {row, j})), max});
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, centered, {j});
  return g.Sink({g.End(g.Store(g.Target(out, i), sum), {i})}, "centered");
}

TEST(LowerKernel, HoistsReductionsThatDoNotDependOnTheEnclosingLoop) {
  auto ast = DecodeKernelAst(CenteredRowSum());
  UOPD_ASSERT_OK(ast);
  auto program = LowerKernel(**ast, "centered", {});
  UOPD_ASSERT_OK(program);
  EXPECT_EQ(MaxLoopDepth(*program), 2) << "max over k must not run inside the sum over j:\n"
                                       << program->Dump();

  ThreadPool pool(1);
  auto device = CreateCpuDevice(&pool);
  UOPD_ASSERT_OK(device);
  std::vector<HostBuffer> bufs = {
      HostBuffer::Of(std::vector<float>(3, 0)),
      HostBuffer::Of(std::vector<float>{1, 2, 3, 4, 0, 0, 0, 8, -1, -2, -3, -4})};
  UOPD_ASSERT_OK(testing::RunOn(**device, CenteredRowSum(), bufs));
  EXPECT_EQ(bufs[0].As<float>(), (std::vector<float>{-6, -24, -6}));
}

// out[i] = i < 2 ? sum_j x[i*4 + j] : 0 over 4 rows (a masked window position's reduction).
// `gather`: the row read is x[idx[i]*4 + j], which no bound proves in range.
v1::Graph GuardedRowSum(bool gather) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 4);
  int i = g.Range(g.Index(4), 0);
  int x = g.Buffer(1, DType::FLOAT32, 16);
  int row = i;
  if (gather) {
    int idx = g.Buffer(2, DType::INT32, 4);
    row = g.Node(Node::CAST, DType::INDEX, {g.Load(idx, i)});
  }
  int j = g.Range(g.Index(4), 1, v1::RangeArg::REDUCE);
  int at = g.Node(Node::ADD, DType::INDEX, {g.Node(Node::MUL, DType::INDEX, {row, g.Index(4)}), j});
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(x, at), {j});
  int first_rows = g.Node(Node::CMPLT, DType::BOOL, {i, g.Index(2)});
  int value = g.Node(Node::WHERE, DType::FLOAT32, {first_rows, sum, g.Float(DType::FLOAT32, 0)});
  return g.Sink({g.End(g.Store(g.Target(out, i), value), {i})}, "guarded");
}

// Whether the innermost loop's end is computed by a WHERE (the reduction's guard).
bool InnerLoopGuarded(const LinearProgram& program) {
  const Instr* inner = nullptr;
  for (const Instr& in : program.instrs) {
    if (in.kind == InstrKind::kLoopBegin) inner = &in;
  }
  if (inner == nullptr) return false;
  const Instr& end = program.instrs[inner->src[1]];
  return end.kind == InstrKind::kAlu && end.op == Op::kWhere;
}

TEST(LowerKernel, SkipsAReductionItsMaskDiscardsUnlessAnAccessNeedsACheck) {
  auto ast = DecodeKernelAst(GuardedRowSum(/*gather=*/false));
  UOPD_ASSERT_OK(ast);
  auto program = LowerKernel(**ast, "guarded", {});
  UOPD_ASSERT_OK(program);
  EXPECT_TRUE(InnerLoopGuarded(*program)) << program->Dump();
  ThreadPool pool(1);
  auto device = CreateCpuDevice(&pool);
  UOPD_ASSERT_OK(device);
  std::vector<float> x(16);
  for (int k = 0; k < 16; ++k) x[k] = static_cast<float>(k);
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(4, -1)), HostBuffer::Of(x)};
  UOPD_ASSERT_OK(testing::RunOn(**device, GuardedRowSum(false), bufs));
  EXPECT_EQ(bufs[0].As<float>(), (std::vector<float>{6, 22, 0, 0}));

  // A gathered row may be out of range: the access is checked when the kernel runs, and the
  // reduction must run (and fail) even on the rows the mask discards.
  auto gathered = DecodeKernelAst(GuardedRowSum(/*gather=*/true));
  UOPD_ASSERT_OK(gathered);
  auto checked = LowerKernel(**gathered, "gathered", {});
  UOPD_ASSERT_OK(checked);
  EXPECT_FALSE(InnerLoopGuarded(*checked)) << checked->Dump();
  std::vector<HostBuffer> bad = {HostBuffer::Of(std::vector<float>(4, -1)), HostBuffer::Of(x),
                                 HostBuffer::Of(std::vector<int32_t>{0, 1, 2, 9})};
  EXPECT_EQ(testing::RunOn(**device, GuardedRowSum(true), bad).code(),
            absl::StatusCode::kOutOfRange);
}

TEST(LowerKernel, PicksInt32IndexWhenRangesFitAndInt64Otherwise) {
  GraphBuilder small;
  int out = small.Buffer(0, DType::INT32, 100);
  int r = small.Range(small.Index(100), 0);
  auto ast = DecodeKernelAst(
      small.Sink({small.End(small.Store(small.Target(out, r), small.Int(DType::INT32, 1)), {r})}));
  UOPD_ASSERT_OK(ast);
  auto program = LowerKernel(**ast, "k", {});
  UOPD_ASSERT_OK(program);
  EXPECT_EQ(program->index_bits, 32);

  GraphBuilder big;
  int big_out = big.Buffer(0, DType::INT8, int64_t{3} << 31);
  int r2 = big.Range(big.Index(int64_t{3} << 31), 0);
  auto big_ast = DecodeKernelAst(
      big.Sink({big.End(big.Store(big.Target(big_out, r2), big.Int(DType::INT8, 1)), {r2})}));
  UOPD_ASSERT_OK(big_ast);
  auto big_program = LowerKernel(**big_ast, "k", {});
  UOPD_ASSERT_OK(big_program);
  EXPECT_EQ(big_program->index_bits, 64);
}

TEST(LowerKernel, MapsParallelRangesOntoTheGpuGrid) {
  auto ast = DecodeKernelAst(CenteredRowSum());
  UOPD_ASSERT_OK(ast);
  LowerOptions options;
  options.gpu_grid = true;
  auto program = LowerKernel(**ast, "centered", options);
  UOPD_ASSERT_OK(program);
  ASSERT_EQ(program->grid_ends.size(), 1u);
  EXPECT_EQ(MaxLoopDepth(*program), 1) << "only the reductions remain loops:\n" << program->Dump();
  EXPECT_TRUE(program->var_names.empty());
}

}  // namespace
}  // namespace uopd
