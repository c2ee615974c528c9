// Optimized kernels on the CPU: what the optimizer's opts turn into (vector registers, register
// tiles), and that they keep the kernel's meaning, including where tinygrad 0.12 does not.
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/match.h"
#include "backends/cpu/cpu_device.h"
#include "backends/cpu/llvm_renderer.h"
#include "core/corpus/corpus_file.h"
#include "core/opt/cost_model.h"
#include "core/opt/optimize.h"
#include "core/opt/scheduler.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using testing::HostBuffer;
using v1::DType;
using v1::Node;

class OptimizedKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(&pool_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }
  OptTarget Target() const {
    return OptTargetFor("CPU", device_->compiler().Target(), device_->threads());
  }
  std::shared_ptr<const KernelAst> Optimize(const v1::Graph& graph, std::vector<Opt> opts) {
    auto ast = DecodeKernelAst(graph);
    EXPECT_TRUE(ast.ok()) << ast.status();
    OptimizeRequest request;
    request.mode = OptMode::kOpts;
    request.opts = std::move(opts);
    auto optimized = OptimizeKernel(*ast, Target(), request);
    EXPECT_TRUE(optimized.ok()) << optimized.status();
    return optimized->ast;
  }
  ThreadPool pool_{1};
  std::unique_ptr<Device> device_;
};

Opt MakeOpt(OptOp op, int axis, int arg) {
  Opt opt;
  opt.op = op;
  opt.axis = axis;
  opt.arg = arg;
  return opt;
}

// out[r] = sum_k (in[r, k] + 1) over a rows x cols float32 matrix.
v1::Graph SumPlusOne(int64_t rows, int64_t cols) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, rows);
  int r = g.Range(g.Index(rows), 0);
  int in = g.Buffer(1, DType::FLOAT32, rows * cols);
  int k = g.Range(g.Index(cols), 1, v1::RangeArg::REDUCE);
  int value = g.Node(Node::ADD, DType::FLOAT32,
                     {g.Load(in, g.RowMajor(r, cols, k)), g.Float(DType::FLOAT32, 1.0)});
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, value, {k});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})});
}

TEST_F(OptimizedKernelTest, PaddingAReduceAxisNeverChangesTheSum) {
  // tinygrad 0.12 sums (ones(8, 13) + 1) padded to 16 columns to 29: each padded element adds
  // f(0) = 1. uopd masks the summand when it is not 0 for padded elements.
  auto padded = Optimize(SumPlusOne(8, 13), {MakeOpt(OptOp::kPadTo, 1, 16)});
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(8, -1.0f)),
                                     HostBuffer::Of(std::vector<float>(8 * 13, 1.0f))};
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, padded, buffers));
  for (float sum : buffers[0].As<float>()) EXPECT_EQ(sum, 26.0f);
}

TEST_F(OptimizedKernelTest, HeuristicsTileAMatmulInVectorRegistersWithTheSameResult) {
  const int64_t m = 48, k = 40, n = 64;
  auto ast = DecodeKernelAst(testing::Matmul(m, k, n));
  UOPD_ASSERT_OK(ast);
  OptimizeRequest heuristic;
  heuristic.mode = OptMode::kHeuristic;
  auto optimized = OptimizeKernel(*ast, Target(), heuristic);
  UOPD_ASSERT_OK(optimized);
  // A register tile: the contiguous output axis upcast (vector lanes, then more vectors) and
  // the rows upcast.
  EXPECT_GE(optimized->applied.size(), 2u) << OptsToString(optimized->applied);
  auto spec = device_->renderer().Render(optimized->ast, "mm");
  UOPD_ASSERT_OK(spec);
  EXPECT_TRUE(absl::StrContains(spec->src, " x float> ")) << "no vector accumulators";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(m * k), b(k * n);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  std::vector<HostBuffer> plain = {HostBuffer::Of(std::vector<float>(m * n)), HostBuffer::Of(a),
                                   HostBuffer::Of(b)};
  std::vector<HostBuffer> tiled = plain;
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, *ast, plain));
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, optimized->ast, tiled));
  std::vector<float> want = plain[0].As<float>(), got = tiled[0].As<float>();
  for (size_t e = 0; e < want.size(); ++e) EXPECT_NEAR(got[e], want[e], 1e-4) << "element " << e;
}

// out[r] = sum over c of in[r, c], float32.
v1::Graph RowSum(int64_t rows, int64_t cols) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, rows);
  int r = g.Range(g.Index(rows), 0);
  int in = g.Buffer(1, DType::FLOAT32, rows * cols);
  int k = g.Range(g.Index(cols), 1, v1::RangeArg::REDUCE);
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(in, g.RowMajor(r, cols, k)), {k});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})});
}

TEST_F(OptimizedKernelTest, ARowSumKeepsPartialSumsPerVectorLane) {
  const int64_t rows = 8, cols = 64;
  auto unrolled = Optimize(RowSum(rows, cols), {MakeOpt(OptOp::kUnroll, 0, 16)});
  auto spec = device_->renderer().Render(unrolled, "rowsum");
  UOPD_ASSERT_OK(spec);
  EXPECT_TRUE(absl::StrContains(spec->src, "load <16 x float>")) << "not one vector load";
  EXPECT_TRUE(absl::StrContains(spec->src, "shufflevector")) << "no horizontal sum";
  std::vector<float> values(rows * cols);
  for (size_t e = 0; e < values.size(); ++e) values[e] = static_cast<float>(e % 7);
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(rows)),
                                     HostBuffer::Of(values)};
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, unrolled, buffers));
  for (int64_t row = 0; row < rows; ++row) {
    float want = 0;
    for (int64_t c = 0; c < cols; ++c) want += values[row * cols + c];
    EXPECT_EQ(buffers[0].As<float>()[row], want);
  }
}

TEST_F(OptimizedKernelTest, AReductionWhollyInTheLanesAddsThemInOrderAsTinygradDoes) {
  // sum(x[r, 0..3]) with its 4 elements unrolled into lanes and no loop left: tinygrad's
  // expander folds lane after lane, ((x0 + x1) + x2) + x3; halving, (x0 + x2) + (x1 + x3), gives
  // 2 instead of 1 on these values (and was 1 ulp off tinygrad on test_swizzle_reduceop).
  const int64_t rows = 3, cols = 4;
  auto unrolled = Optimize(RowSum(rows, cols), {MakeOpt(OptOp::kUnroll, 0, 0)});
  std::vector<float> values;
  for (int64_t row = 0; row < rows; ++row) {
    for (float v : {1e8f, 1.0f, -1e8f, 1.0f}) values.push_back(v);
  }
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(rows)),
                                     HostBuffer::Of(values)};
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, unrolled, buffers));
  EXPECT_EQ(buffers[0].As<float>(), std::vector<float>(rows, 1.0f));
}

// tinygrad's pad of a 2x3x4x5 tensor with PADTO(2, 8) UPCAST(2, 16): each row is a masked
// 16-lane load whose first lane may point 22 elements before the input. On Zen 2 (AVX2), LLVM 19
// split the masked load and loaded its upper half, whose mask folded to all-false, without its
// mask: 29 of 288 elements came out as the input's bytes instead of 0. Without AVX-512, masked
// accesses wider than 256 bits are written lane by lane; both forms give tinygrad's output.
TEST_F(OptimizedKernelTest, PaddedRowsReadOnlyTheirMaskedLanes) {
  auto entry = LoadCorpusFile(testing::CorpusDir() + "/cases/mov_pad_4d_2x3x4x5.json");
  UOPD_ASSERT_OK(entry);
  const v1::CorpusCase& kase = entry->kase;
  auto padded =
      Optimize(kase.ast(), {MakeOpt(OptOp::kPadTo, 2, 8), MakeOpt(OptOp::kUpcast, 2, 16)});
  ASSERT_NE(padded, nullptr);
  for (bool masked_vectors : {true, false}) {
    LlvmRendererOptions options;
    options.max_masked_vector_bits = masked_vectors ? 0 : 256;
    auto spec = LlvmRenderer(options).Render(padded, "pad");
    UOPD_ASSERT_OK(spec);
    EXPECT_EQ(absl::StrContains(spec->src, "@llvm.masked.load"), masked_vectors) << spec->src;
    if (masked_vectors) {  // the first lane's address is outside the buffer: no inbounds
      EXPECT_FALSE(absl::StrContains(spec->src, "getelementptr inbounds float, ptr %buf1"))
          << spec->src;
    }
  }
  std::vector<HostBuffer> buffers;
  for (const v1::CorpusBuffer& b : kase.buffers()) {
    HostBuffer host;
    host.bytes = b.init();
    host.bytes.resize(b.size() * sizeof(float), '\x7f');  // an uninitialized output: not 0
    buffers.push_back(std::move(host));
  }
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, padded, buffers));
  ASSERT_EQ(kase.outputs_size(), 1);
  const std::string& want = kase.outputs(0).expected();
  const std::vector<float> got = buffers[kase.outputs(0).slot()].As<float>();
  ASSERT_EQ(got.size() * sizeof(float), want.size());
  for (size_t e = 0; e < got.size(); ++e) {
    float w;
    std::memcpy(&w, want.data() + e * sizeof(float), sizeof(float));
    EXPECT_EQ(got[e], w) << "element " << e;
  }
}

// Masked vector accesses wider than 32 bytes are written lane by lane on x86 without AVX-512
// (above), and the cost model charges them so: the heuristics then pad a reduction to 8 lanes
// there, not 16 (tinygrad's CNN weight gradient r_8_32_3_2_3_4_64_11_11 on Zen 2: 22.6 ms with
// 16 lanes lane by lane, 5.5 ms with 8; tinygrad 12.7 ms).
TEST_F(OptimizedKernelTest, TheCostModelChargesMaskedVectorsWrittenLaneByLane) {
  const v1::Graph sum = SumPlusOne(64, 169);
  auto wide = Optimize(sum, {MakeOpt(OptOp::kPadTo, 1, 8), MakeOpt(OptOp::kUnroll, 0, 16)});
  auto narrow = Optimize(sum, {MakeOpt(OptOp::kPadTo, 1, 8), MakeOpt(OptOp::kUnroll, 0, 8)});
  ASSERT_NE(wide, nullptr);
  ASSERT_NE(narrow, nullptr);
  const OptTarget avx2 = OptTargetFor("CPU", "x86_64-pc-linux-gnu;znver2;+avx,+avx2,-avx512f", 2);
  const OptTarget avx512 = OptTargetFor("CPU", "x86_64-pc-linux-gnu;znver5;+avx,+avx2,+avx512f", 2);
  auto cost = [](std::shared_ptr<const KernelAst> ast, const OptTarget& target) {
    auto c = EstimateCpuKernelCost(ast, target);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->compute_cycles : 0.0;
  };
  EXPECT_GT(cost(wide, avx2), cost(narrow, avx2));
  EXPECT_GT(cost(wide, avx2), cost(wide, avx512)) << "16 lanes are one masked load there";
}

}  // namespace
}  // namespace uopd
