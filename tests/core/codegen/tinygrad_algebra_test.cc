// tinygrad's always-applied float rewrites (core/codegen/tinygrad_algebra.h): the kernels of
// tinygrad's test_ops "extreme" tests give tinygrad's numbers, not the NaN or inf of the AST as
// written.
#include "core/codegen/tinygrad_algebra.h"

#include <cmath>
#include <limits>

#include "backends/cpu/cpu_device.h"
#include "core/util/thread_pool.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using testing::HostBuffer;
using S = v1::DType;
constexpr float kInf = std::numeric_limits<float>::infinity();

// out[i] = body(g, x) with x = in[i], over float32.
template <typename Body>
std::shared_ptr<const KernelAst> Elementwise(int64_t n, Body body) {
  GraphBuilder g;
  int out = g.Buffer(0, S::FLOAT32, n);
  int i = g.Range(g.Index(n), 0);
  int in = g.Buffer(1, S::FLOAT32, n);
  int value = body(g, g.Load(in, i));
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), value), {i})}));
  EXPECT_TRUE(ast.ok()) << ast.status();
  return *ast;
}

int Recip(GraphBuilder& g, int x) { return g.Node(v1::Node::RECIPROCAL, S::FLOAT32, {x}); }
int Mul(GraphBuilder& g, int a, int b) { return g.Node(v1::Node::MUL, S::FLOAT32, {a, b}); }
int Add(GraphBuilder& g, int a, int b) { return g.Node(v1::Node::ADD, S::FLOAT32, {a, b}); }
int One(GraphBuilder& g) { return g.Float(S::FLOAT32, 1.0); }

class TinygradAlgebra : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(&pool_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }
  std::vector<float> Run(std::shared_ptr<const KernelAst> ast, const std::vector<float>& in) {
    std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(in.size())),
                                       HostBuffer::Of(in)};
    absl::Status status = testing::RunAstOn(*device_, ast, buffers);
    EXPECT_TRUE(status.ok()) << status;
    return buffers[0].As<float>();
  }
  ThreadPool pool_{1};
  std::unique_ptr<Device> device_;
};

TEST_F(TinygradAlgebra, SigmoidOfInfinityIsOneNotNan) {
  // tinygrad's sigmoid: e * (1/(1+e)), e = exp(x); written as the AST says, inf * 0 = NaN.
  for (bool swapped : {false, true}) {
    auto ast = Elementwise(3, [&](GraphBuilder& g, int e) {
      int d = Recip(g, swapped ? Add(g, e, One(g)) : Add(g, One(g), e));
      return swapped ? Mul(g, d, e) : Mul(g, e, d);
    });
    std::vector<float> out = Run(ast, {kInf, 0.0f, -kInf});
    EXPECT_EQ(out[0], 1.0f) << "swapped=" << swapped;
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_EQ(out[2], 1.0f) << "tinygrad's 1 - 1/(1-inf) = 1 - (-0); as written -inf*-0 = NaN";
  }
}

TEST_F(TinygradAlgebra, TheProductAndSumFormsToo) {
  // x * ((1/(1+x)) * y) -> y * (1 - 1/(1+x)), with y = 2.
  auto product = Elementwise(1, [&](GraphBuilder& g, int x) {
    return Mul(g, x, Mul(g, Recip(g, Add(g, One(g), x)), g.Float(S::FLOAT32, 2.0)));
  });
  EXPECT_EQ(Run(product, {kInf})[0], 2.0f);
  // x * ((1/(1+x)) + y) -> (1 - 1/(1+x)) + x*y, with y = 0.5.
  auto sum = Elementwise(1, [&](GraphBuilder& g, int x) {
    return Mul(g, x, Add(g, Recip(g, Add(g, One(g), x)), g.Float(S::FLOAT32, 0.5)));
  });
  EXPECT_EQ(Run(sum, {3.0f})[0], 0.75f + 1.5f);
}

TEST_F(TinygradAlgebra, GradientOfExpOverOnePlusExpIsZeroAtExtremes) {
  // test_ops' test_sigmoid_alt_extreme: d/dx exp(x)/(1+exp(x)) as tinygrad schedules it,
  // e * (d + ((e*d)*d)*-1) with d = 1/(1+e). tinygrad moves the -1 to the end of the product
  // e * (((1-d)*d)*-1), which exposes e*(d*y) -> y*(1-d): 0 at e = inf, not inf * -0 = NaN.
  auto grad = Elementwise(3, [&](GraphBuilder& g, int e) {
    int d = Recip(g, Add(g, One(g), e));
    int product = Mul(g, Mul(g, Mul(g, e, d), d), g.Float(S::FLOAT32, -1.0));
    return Mul(g, e, Add(g, d, product));
  });
  std::vector<float> out = Run(grad, {kInf, 0.0f, 1.0f});
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_FLOAT_EQ(out[2], 0.25f);  // e = 1: d = 1/2, (1-d) - (1-d)^2 = 1/4
}

TEST_F(TinygradAlgebra, ConstantsMoveOnlyWhereTheyExposeARule) {
  // x * (y * 2) with no reciprocal of 1+x: rounding as written, the AST is kept.
  auto plain = Elementwise(1, [&](GraphBuilder& g, int x) {
    return Mul(g, x, Mul(g, Recip(g, Add(g, x, x)), g.Float(S::FLOAT32, 2.0)));
  });
  EXPECT_EQ(ApplyTinygradAlgebra(plain), plain);
}

TEST_F(TinygradAlgebra, ReciprocalsOfProductsDoNotOverflowFirst) {
  auto square = Elementwise(1, [&](GraphBuilder& g, int x) { return Recip(g, Mul(g, x, x)); });
  // 1/(x*x) with x*x = inf in float32 would be 0; (1/x)*(1/x) is 1e-40 (a denormal).
  EXPECT_GT(Run(square, {1e20f})[0], 0.0f);
  auto cube =
      Elementwise(1, [&](GraphBuilder& g, int x) { return Recip(g, Mul(g, Mul(g, x, x), x)); });
  EXPECT_FLOAT_EQ(Run(cube, {2.0f})[0], 0.125f);
  auto scaled = Elementwise(
      1, [&](GraphBuilder& g, int x) { return Recip(g, Mul(g, x, g.Float(S::FLOAT32, 1e30))); });
  EXPECT_GT(Run(scaled, {1e10f})[0], 0.0f) << "1/(1e10*1e30) overflows first as written";
}

TEST_F(TinygradAlgebra, LeavesOtherKernelsAsTheyAre) {
  auto plain = Elementwise(1, [&](GraphBuilder& g, int x) { return Recip(g, Add(g, x, x)); });
  EXPECT_EQ(ApplyTinygradAlgebra(plain), plain);
  auto sigmoid = Elementwise(
      1, [&](GraphBuilder& g, int e) { return Mul(g, e, Recip(g, Add(g, One(g), e))); });
  auto rewritten = ApplyTinygradAlgebra(sigmoid);
  EXPECT_NE(rewritten, sigmoid);
  EXPECT_EQ(rewritten->hash, sigmoid->hash) << "the rewrite is part of the AST's meaning";
}

}  // namespace
}  // namespace uopd
