// SplitColumnReduction: which kernels the GPU heuristics split down their columns, and which
// they leave to tinygrad's hand-coded opts.
#include "core/opt/column_split.h"

#include <memory>

#include "core/opt/optimize.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using v1::DType;
using v1::Node;

// out[j] = sum_i x[i * row_step + j * column_step] over `rows` rows and `columns` columns.
std::shared_ptr<const KernelAst> Sum(int64_t rows, int64_t columns, int64_t row_step,
                                     int64_t column_step) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, columns);
  int x = g.Buffer(1, DType::FLOAT32, rows * columns);
  int j = g.Range(g.Index(columns), 0, v1::RangeArg::LOOP);
  int i = g.Range(g.Index(rows), 1, v1::RangeArg::REDUCE);
  auto mul = [&](int a, int64_t c) { return g.Node(Node::MUL, DType::INDEX, {a, g.Index(c)}); };
  int index = g.Node(Node::ADD, DType::INDEX, {mul(i, row_step), mul(j, column_step)});
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(x, index), {i});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, j), sum), {j})}));
  EXPECT_TRUE(ast.ok()) << ast.status();
  return *ast;
}

std::string HeuristicOpts(const std::shared_ptr<const KernelAst>& ast, const OptTarget& target) {
  auto optimized = OptimizeKernel(ast, target, OptimizeRequest{OptMode::kHeuristic, {}});
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  return optimized.ok() ? OptsToString(optimized->applied) : "";
}

const std::string kSplit = OptsToString({Opt{OptOp::kLocal, 0, 32}, Opt{OptOp::kGroup, 0, 8}});

TEST(ColumnSplit, AColumnSumOfFewOutputsIsSplitAcrossABlock) {
  EXPECT_EQ(HeuristicOpts(Sum(4096, 4096, 4096, 1), OptTarget::Cuda("sm_80")), kSplit);
  EXPECT_EQ(HeuristicOpts(Sum(512, 64, 64, 1), OptTarget::Cuda("sm_90")), kSplit);
}

TEST(ColumnSplit, OtherShapesKeepTheirOwnOpts) {
  const OptTarget gpu = OptTarget::Cuda("sm_80");
  EXPECT_NE(HeuristicOpts(Sum(4096, 4096, 1, 4096), gpu), kSplit);    // a row sum
  EXPECT_NE(HeuristicOpts(Sum(128, 4096, 4096, 1), gpu), kSplit);     // few rows
  EXPECT_NE(HeuristicOpts(Sum(4096, 65536, 65536, 1), gpu), kSplit);  // enough outputs
  EXPECT_NE(HeuristicOpts(Sum(4096, 48, 48, 1), gpu), kSplit);        // not whole warps
  EXPECT_EQ(HeuristicOpts(Sum(4096, 4096, 4096, 1), OptTarget::Cpu(2)).find("GROUP"),
            std::string::npos);  // no shared memory
}

}  // namespace
}  // namespace uopd
