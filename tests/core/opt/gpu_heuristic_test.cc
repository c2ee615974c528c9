// GpuHeuristicContenders: which lists a GPU times against the heuristics' choice, for which
// kernels, and that each applies to the kernel as a client's opts would.
#include "core/opt/gpu_heuristic.h"

#include <memory>
#include <string>
#include <vector>

#include "core/opt/optimize.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

std::shared_ptr<const KernelAst> Decoded(const v1::Graph& graph) {
  auto ast = DecodeKernelAst(graph);
  EXPECT_TRUE(ast.ok()) << ast.status();
  return ast.ok() ? *ast : nullptr;
}

// The contenders as strings, after checking that the first is the heuristics' choice and that
// every one applies as a client's list.
std::vector<std::string> Contenders(const std::shared_ptr<const KernelAst>& ast,
                                    const OptTarget& target) {
  const std::vector<std::vector<Opt>> contenders = HeuristicContendersFor(ast, target);
  std::vector<std::string> out;
  for (const std::vector<Opt>& opts : contenders) {
    UOPD_EXPECT_OK(OptimizeKernel(ast, target, OptimizeRequest{OptMode::kOpts, opts}));
    out.push_back(OptsToString(opts));
  }
  auto chosen = OptimizeKernel(ast, target, OptimizeRequest{OptMode::kHeuristic, {}});
  EXPECT_TRUE(chosen.ok()) << chosen.status();
  if (chosen.ok() && !out.empty()) {
    EXPECT_EQ(out.front(), OptsToString(chosen->applied));
  }
  return out;
}

bool HasTensorCore(const std::string& opts) { return opts.find("TC") != std::string::npos; }

TEST(GpuHeuristicContenders, AHalfMatmulTimesTensorCoresAgainstTinygradsListWithout) {
  const OptTarget gpu = OptTarget::Cuda("sm_80");
  const std::vector<std::string> contenders = Contenders(
      Decoded(testing::Matmul(1024, 1024, 1024, v1::DType::FLOAT16, v1::DType::FLOAT32)), gpu);
  ASSERT_EQ(contenders.size(), 2u);
  EXPECT_TRUE(HasTensorCore(contenders[0])) << contenders[0];
  EXPECT_FALSE(HasTensorCore(contenders[1])) << contenders[1];
  EXPECT_NE(contenders[1], "");
}

TEST(GpuHeuristicContenders, SmallKernelsAreNotTimedUnlessTheyTakeTensorCores) {
  const OptTarget gpu = OptTarget::Cuda("sm_80");
  EXPECT_EQ(Contenders(Decoded(testing::ColumnSumKernel(512, 64)), gpu).size(), 1u);
  EXPECT_EQ(Contenders(Decoded(testing::RowSumKernel(64, 512)), gpu).size(), 1u);
  // Tensor cores are checked on the GPU whatever the kernel's size: a 64^3 matmul is timed, and
  // checked, against tinygrad's list without them.
  const std::vector<std::string> small =
      Contenders(Decoded(testing::Matmul(64, 64, 64, v1::DType::FLOAT16, v1::DType::FLOAT32)), gpu);
  ASSERT_EQ(small.size(), 2u);
  EXPECT_TRUE(HasTensorCore(small[0]));
  EXPECT_FALSE(HasTensorCore(small[1]));
}

TEST(GpuHeuristicContenders, UopdsReductionsAreTimedAgainstTinygradsLists) {
  const OptTarget gpu = OptTarget::Cuda("sm_80");
  // A column sum: split across a block's threads, or tinygrad's list.
  const std::vector<std::string> columns =
      Contenders(Decoded(testing::ColumnSumKernel(4096, 4096)), gpu);
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[0], OptsToString({Opt{OptOp::kLocal, 0, 32}, Opt{OptOp::kGroup, 0, 8}}));
  // A row sum the warp's lanes share: with float4 loads, tinygrad's list, or as written.
  const std::vector<std::string> rows = Contenders(Decoded(testing::RowSumKernel(4096, 4096)), gpu);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], OptsToString({Opt{OptOp::kUnroll, 0, 4}}));
  EXPECT_EQ(rows[2], "");
}

TEST(GpuHeuristicContenders, AKernelWithOneChoiceIsNotTimed) {
  // An elementwise kernel: tinygrad's list whatever the cores.
  EXPECT_EQ(Contenders(Decoded(testing::AddKernel(1 << 24)), OptTarget::Cuda("sm_80")).size(), 1u);
  // Without tensor cores (--tensor_cores=false), a half matmul has tinygrad's list alone.
  OptTarget no_cores = OptTarget::Cuda("sm_80");
  no_cores.tensor_cores.clear();
  EXPECT_EQ(
      Contenders(Decoded(testing::Matmul(1024, 1024, 1024, v1::DType::FLOAT16, v1::DType::FLOAT32)),
                 no_cores)
          .size(),
      1u);
}

}  // namespace
}  // namespace uopd
