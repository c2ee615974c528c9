// The shared lowering: loop structure, reduction hoisting, index width, GPU grid mapping.
#include "core/codegen/lower.h"

#include "backends/cpu/cpu_device.h"
#include "core/wire/decode.h"
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

// out[i] = sum_k (sum_j x[i, k, j] + max_j x[i, k, j]) over 2 x 3 x 4: two reductions over j that
// depend on the outer reduction's k (a window position's sums over channels, as tinygrad's
// convolution gradients have them).
v1::Graph SumOfInnerReductions() {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 2);
  int i = g.Range(g.Index(2), 0);
  int x = g.Buffer(1, DType::FLOAT32, 24);
  int k = g.Range(g.Index(3), 1, v1::RangeArg::REDUCE);
  int j = g.Range(g.Index(4), 2, v1::RangeArg::REDUCE);
  int row = g.Node(Node::ADD, DType::INDEX,
                   {g.Node(Node::MUL, DType::INDEX, {i, g.Index(12)}),
                    g.Node(Node::MUL, DType::INDEX, {k, g.Index(4)})});
  int value = g.Load(x, g.Node(Node::ADD, DType::INDEX, {row, j}));
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, value, {j});
  int max = g.Reduce(Node::MAX, DType::FLOAT32, value, {j});
  int total =
      g.Reduce(Node::ADD, DType::FLOAT32, g.Node(Node::ADD, DType::FLOAT32, {sum, max}), {k});
  return g.Sink({g.End(g.Store(g.Target(out, i), total), {i})}, "inner_reductions");
}

TEST(LowerKernel, ReductionsInsideAReductionShareOneLoopNest) {
  auto ast = DecodeKernelAst(SumOfInnerReductions());
  UOPD_ASSERT_OK(ast);
  auto program = LowerKernel(**ast, "inner_reductions", {});
  UOPD_ASSERT_OK(program);
  const int loops = std::count_if(program->instrs.begin(), program->instrs.end(),
                                  [](const Instr& in) { return in.kind == InstrKind::kLoopBegin; });
  EXPECT_EQ(loops, 3) << "the sum and the max over j must run in one loop:\n" << program->Dump();
  EXPECT_EQ(MaxLoopDepth(*program), 3);

  ThreadPool pool(1);
  auto device = CreateCpuDevice(&pool);
  UOPD_ASSERT_OK(device);
  std::vector<float> x(24);
  for (int n = 0; n < 24; ++n) x[n] = static_cast<float>((n * 7) % 11) - 5;
  std::vector<float> expected(2, 0);
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      float sum = 0, max = -1e30f;
      for (int c = 0; c < 4; ++c) {
        sum += x[a * 12 + b * 4 + c];
        max = std::max(max, x[a * 12 + b * 4 + c]);
      }
      expected[a] += sum + max;
    }
  }
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(2, 0)), HostBuffer::Of(x)};
  UOPD_ASSERT_OK(testing::RunOn(**device, SumOfInnerReductions(), bufs));
  EXPECT_EQ(bufs[0].As<float>(), expected);
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
