// The CPU backend end to end on hand-made kernels: signatures, memory safety, variables,
// determinism, threading, and integer edge cases that must not crash the process.
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/llvm_renderer.h"
#include "core/codegen/lower.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::AddKernel;
using testing::GraphBuilder;
using testing::HostBuffer;
using testing::StatusIs;
using v1::DType;
using v1::Node;

class CpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(&pool_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }
  ThreadPool pool_{3};
  std::unique_ptr<Device> device_;
};

TEST_F(CpuBackendTest, ProgramSpecDescribesTheKernelSignature) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 4);
  int n = g.Var("n", 1, 4);
  int r = g.Range(n, 0);
  int in = g.Buffer(1, DType::FLOAT32, 4);
  int r2 = g.Range(g.Index(4), 1, v1::RangeArg::REDUCE);
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(in, r2), {r2});
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})}, "r_sym");
  auto spec = testing::RenderOn(*device_, wire);
  UOPD_ASSERT_OK(spec);
  EXPECT_EQ(spec->name, "r_sym");
  EXPECT_EQ(spec->device, "CPU");
  EXPECT_EQ(spec->buf_count, 2);
  ASSERT_EQ(spec->globals.size(), 2u);
  EXPECT_EQ(spec->globals[1].dtype.scalar, Scalar::kFloat32);
  EXPECT_EQ(spec->outs, std::vector<int>{0});
  EXPECT_EQ(spec->ins, std::vector<int>{1});
  ASSERT_EQ(spec->vars.size(), 1u);
  EXPECT_EQ(spec->vars[0].name, "n");
  EXPECT_EQ(spec->vars[0].max, 4);
  EXPECT_EQ(spec->var_names, (std::vector<std::string>{"n", "core_id", "core_count"}));
  auto dims = spec->launch_dims({{"n", 3}});
  UOPD_ASSERT_OK(dims);
  EXPECT_EQ(dims->global[0], 1) << "a small kernel runs on one thread";
  EXPECT_NE(spec->src.find("define i32 @r_sym(ptr %bufs, ptr %vals, ptr %stop)"), std::string::npos)
      << spec->src;
}

TEST_F(CpuBackendTest, AddsTwoVectors) {
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(5, -1.0f)),
                                  HostBuffer::Of(std::vector<float>{1, 2, 3, 4, 5}),
                                  HostBuffer::Of(std::vector<float>{10, 20, 30, 40, 50})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, AddKernel(5), bufs));
  EXPECT_EQ(bufs[0].As<float>(), (std::vector<float>{11, 22, 33, 44, 55}));
}

TEST_F(CpuBackendTest, SplitsLargeLoopsAcrossThreadsWithTheSameResult) {
  const int64_t n = 1 << 18;
  auto spec = testing::RenderOn(*device_, AddKernel(n));
  UOPD_ASSERT_OK(spec);
  auto dims = spec->launch_dims({});
  UOPD_ASSERT_OK(dims);
  EXPECT_EQ(dims->global[0], n) << "global size is the split loop's extent";
  std::vector<float> a(n), b(n);
  std::iota(a.begin(), a.end(), 0.0f);
  std::iota(b.begin(), b.end(), 1.0f);
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(n, 0)), HostBuffer::Of(a),
                                  HostBuffer::Of(b)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, AddKernel(n), bufs));
  std::vector<float> out = bufs[0].As<float>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << "element " << i;
}

TEST_F(CpuBackendTest, CatchesOutOfBoundsAccessAtRunTimeWithoutTouchingMemory) {
  // out[i] = in[i + shift] with shift a variable in [0, 8]: unprovable, so checked at run time.
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 8);
  int r = g.Range(g.Index(8), 0);
  int in = g.Buffer(1, DType::FLOAT32, 8);
  int shift = g.Var("shift", 0, 8);
  int idx = g.Node(Node::ADD, DType::INDEX, {r, shift});
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, r), g.Load(in, idx)), {r})}, "shifted");
  auto spec = testing::RenderOn(*device_, wire);
  UOPD_ASSERT_OK(spec);
  EXPECT_EQ(spec->guarded_accesses, 1);
  EXPECT_EQ(spec->proven_accesses, 1);

  std::vector<HostBuffer> ok = {HostBuffer::Of(std::vector<float>(8, 0)),
                                HostBuffer::Of(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, ok, {{"shift", 0}}));
  EXPECT_EQ(ok[0].As<float>()[7], 7.0f);

  std::vector<HostBuffer> bad = ok;
  EXPECT_TRUE(StatusIs(testing::RunOn(*device_, wire, bad, {{"shift", 3}}),
                       absl::StatusCode::kOutOfRange, {"kernel shifted", "buffer slot 1"}));
}

TEST_F(CpuBackendTest, ProvesMaskedAccessesFromTheirCondition) {
  // out[i] = i >= 2 ? in[i - 2] : -1: in bounds only because of the mask.
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 9);
  int r = g.Range(g.Index(9), 0);
  int lt = g.Node(Node::CMPLT, DType::BOOL, {r, g.Index(2)});
  int valid = g.Node(Node::CMPNE, DType::BOOL, {lt, g.Bool(true)});
  int in = g.Buffer(1, DType::FLOAT32, 9);
  int idx = g.Node(Node::WHERE, DType::INDEX,
                   {valid, g.Node(Node::ADD, DType::INDEX, {r, g.Index(-2)}), g.Invalid()});
  int value =
      g.Node(Node::WHERE, DType::FLOAT32, {valid, g.Load(in, idx), g.Float(DType::FLOAT32, -1)});
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, r), value), {r})}, "masked");
  auto spec = testing::RenderOn(*device_, wire);
  UOPD_ASSERT_OK(spec);
  EXPECT_EQ(spec->guarded_accesses, 0) << "the mask proves i - 2 >= 0";
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(9, 0)),
                                  HostBuffer::Of(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  EXPECT_EQ(bufs[0].As<float>(), (std::vector<float>{-1, -1, 1, 2, 3, 4, 5, 6, 7}));
}

TEST_F(CpuBackendTest, RefusesVariableValuesOutsideTheirBounds) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::INT32, 10);
  int n = g.Var("n", 1, 10);
  int r = g.Range(n, 0);
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, r), g.Int(DType::INT32, 7)), {r})});
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<int32_t>(10, 0))};
  EXPECT_TRUE(StatusIs(testing::RunOn(*device_, wire, bufs, {{"n", 11}}),
                       absl::StatusCode::kInvalidArgument, {"'n' = 11 is outside [1, 10]"}));
  EXPECT_TRUE(StatusIs(testing::RunOn(*device_, wire, bufs, {}), absl::StatusCode::kInvalidArgument,
                       {"no value for variable 'n'"}));
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs, {{"n", 3}}));
  EXPECT_EQ(bufs[0].As<int32_t>(), (std::vector<int32_t>{7, 7, 7, 0, 0, 0, 0, 0, 0, 0}));
}

TEST_F(CpuBackendTest, CompilesTheSameAstToIdenticalBytes) {
  auto spec = testing::RenderOn(*device_, AddKernel(64));
  UOPD_ASSERT_OK(spec);
  auto first = device_->compiler().Compile(*spec);
  auto second = device_->compiler().Compile(*testing::RenderOn(*device_, AddKernel(64)));
  UOPD_ASSERT_OK(first);
  UOPD_ASSERT_OK(second);
  EXPECT_FALSE(first->bytes.empty());
  EXPECT_EQ(first->bytes, second->bytes);
}

TEST_F(CpuBackendTest, DefinesIntegerDivisionByZeroAndOverflowInsteadOfTrapping) {
  // out[i] = a[i] / b[i] and a[i] % b[i] on int32, with b = 0 and INT_MIN / -1 in the data.
  GraphBuilder g;
  int q = g.Buffer(0, DType::INT32, 3);
  int m = g.Buffer(1, DType::INT32, 3);
  int r = g.Range(g.Index(3), 0);
  int a = g.Buffer(2, DType::INT32, 3);
  int b = g.Buffer(3, DType::INT32, 3);
  int div = g.Node(Node::IDIV, DType::INT32, {g.Load(a, r), g.Load(b, r)});
  int mod = g.Node(Node::MOD, DType::INT32, {g.Load(a, r), g.Load(b, r)});
  int both = g.Node(Node::GROUP, DType::VOID,
                    {g.Store(g.Target(q, r), div), g.Store(g.Target(m, r), mod)});
  v1::Graph wire = g.Sink({g.End(both, {r})});
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<int32_t>(3, 9)),
                                  HostBuffer::Of(std::vector<int32_t>(3, 9)),
                                  HostBuffer::Of(std::vector<int32_t>{7, kMin, -7}),
                                  HostBuffer::Of(std::vector<int32_t>{0, -1, 2})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  EXPECT_EQ(bufs[0].As<int32_t>(), (std::vector<int32_t>{0, kMin, -3}));
  EXPECT_EQ(bufs[1].As<int32_t>(), (std::vector<int32_t>{0, 0, -1}));
}

TEST_F(CpuBackendTest, LowersDeepExpressionChainsWithoutExhaustingTheStack) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 1);
  int value = g.Float(DType::FLOAT32, 1.0);
  for (int i = 0; i < 4000; ++i) value = g.Node(Node::NEG, DType::FLOAT32, {value});
  v1::Graph wire = g.Sink({g.Store(g.Target(out, g.Index(0)), value)});
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>{0})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  EXPECT_EQ(bufs[0].As<float>()[0], 1.0f);
}

v1::Graph Gather(DType::Scalar index_dtype = DType::INT32) {
  return testing::GatherKernel(index_dtype);
}

// Runs `wire` on a thread and sets the stop flag once it has had time to start: the kernel must
// return CANCELLED (were it not stopped, it would run for hours and the test would time out).
void ExpectStops(Device& device, const v1::Graph& wire, int64_t rows) {
  auto spec = testing::RenderOn(device, wire);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto compiled = device.compiler().Compile(*spec);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto program = device.runtime().Load(*compiled, *spec);
  ASSERT_TRUE(program.ok()) << program.status();
  auto dims = spec->launch_dims({});
  ASSERT_TRUE(dims.ok()) << dims.status();
  std::vector<int32_t> out(rows), in = {1, 2, 3, 4};
  std::vector<void*> buffers = {out.data(), in.data()};
  std::vector<int64_t> vals(spec->var_names.size(), 0);
  StopFlag stop;
  absl::Status status;
  std::thread run([&] { status = (*program)->Execute(buffers, vals, *dims, &stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop.Stop();
  run.join();
  EXPECT_TRUE(StatusIs(status, absl::StatusCode::kCancelled, {"r_mod_sum", "stopped"})) << status;
}

TEST_F(CpuBackendTest, StopsALongInnermostLoopBetweenChunks) {
  ExpectStops(*device_, testing::ModSumKernel(1, {int64_t{1} << 44}), 1);
}

TEST_F(CpuBackendTest, StopsALongOuterLoopAroundAShortOne) {
  ExpectStops(*device_, testing::ModSumKernel(1, {int64_t{1} << 40, 16}), 1);
}

TEST_F(CpuBackendTest, StopsAKernelSplitAcrossThreads) {
  ExpectStops(*device_, testing::ModSumKernel(1 << 16, {int64_t{1} << 40}), 1 << 16);
}

TEST_F(CpuBackendTest, StopFlagsLeaveShortKernelsAlone) {
  // A kernel that finishes before anyone stops it returns its result, checks and all.
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<int32_t>(2, 0)),
                                  HostBuffer::Of(std::vector<int32_t>{1, 2, 3, 4})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, testing::ModSumKernel(2, {1000, 3}), bufs));
  // sum over k0 < 1000, k1 < 3 of in[(k0 + k1) % 4]: each k1 shifts a 1000-long cycle of 1..4.
  int32_t expected = 0;
  for (int k0 = 0; k0 < 1000; ++k0) {
    for (int k1 = 0; k1 < 3; ++k1) expected += 1 + (k0 + k1) % 4;
  }
  EXPECT_EQ(bufs[0].As<int32_t>(), (std::vector<int32_t>{expected, expected}));
}

// The reassociation a reduction may use is for its accumulation only: LLVM must not rewrite the
// factors of a product (pow(c, x) * pow(c, y) into pow(c, x + y) turned products of NaNs into 0).
TEST_F(CpuBackendTest, ProductsKeepTheirFactors) {
  constexpr int kRows = 37, kK = 46;
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT64, kRows);
  int r = g.Range(g.Index(kRows), 0);
  int in = g.Buffer(1, DType::FLOAT64, kRows * kK);
  int k = g.Range(g.Index(kK), 1, v1::RangeArg::REDUCE);
  int idx = g.RowMajor(r, kK, k);
  int pow = g.Node(Node::POW, DType::FLOAT64, {g.Float(DType::FLOAT64, -1.2541), g.Load(in, idx)});
  int product = g.Reduce(Node::MUL, DType::FLOAT64, pow, {k});
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, r), product), {r})});
  // Exponents of every magnitude: most are not integers, so most factors are NaN.
  std::mt19937_64 rng(7);
  std::vector<double> x(kRows * kK);
  for (double& v : x) {
    uint64_t bits = rng();
    std::memcpy(&v, &bits, sizeof(v));
  }
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<double>(kRows)), HostBuffer::Of(x)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  std::vector<double> got = bufs[0].As<double>();
  for (int row = 0; row < kRows; ++row) {
    bool nan = false;  // a NaN factor makes the product NaN, in any order
    for (int j = 0; j < kK; ++j) nan |= std::isnan(std::pow(-1.2541, x[row * kK + j]));
    if (nan) {
      EXPECT_TRUE(std::isnan(got[row])) << "row " << row << ": " << got[row];
    }
  }
}

// (1 + 2^-13)^2 - (1 + 2^-12) is 2^-26 with one rounding and 0 with two: each element of
// a*b+c tells whether its multiply-add was fused.
v1::Graph MultiplyAddKernel(int n) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, n);
  int i = g.Range(g.Index(n), 0);
  auto load = [&](int slot) { return g.Load(g.Buffer(slot, DType::FLOAT32, n), i); };
  int product = g.Node(Node::MUL, DType::FLOAT32, {load(1), load(2)});
  int sum = g.Node(Node::ADD, DType::FLOAT32, {product, load(3)});
  return g.Sink({g.End(g.Store(g.Target(out, i), sum), {i})}, "fma_probe");
}

TEST_F(CpuBackendTest, MultiplyAddsAreFusedOnlyWhereTheRequestAllowsIt) {
  constexpr int kN = 37;  // a vector loop and its tail
  const float a = 1.0f + std::ldexp(1.0f, -13);
  const float c = -(1.0f + std::ldexp(1.0f, -12));
  auto run = [&](const RenderOptions& render) {
    std::vector<HostBuffer> bufs = {
        HostBuffer::Of(std::vector<float>(kN, -1.0f)), HostBuffer::Of(std::vector<float>(kN, a)),
        HostBuffer::Of(std::vector<float>(kN, a)), HostBuffer::Of(std::vector<float>(kN, c))};
    EXPECT_TRUE(testing::RunOn(*device_, MultiplyAddKernel(kN), bufs, {}, render).ok());
    return bufs[0].As<float>();
  };
  EXPECT_EQ(run({}), std::vector<float>(kN, 0.0f)) << "the IR's default: two roundings";
  RenderOptions fma;
  fma.allow_fma = true;
  auto spec = testing::RenderOn(*device_, MultiplyAddKernel(kN), fma);
  UOPD_ASSERT_OK(spec);
  EXPECT_NE(spec->src.find("@llvm.fmuladd."), std::string::npos) << spec->src;
  const std::string& target = device_->compiler().Target();
  if (target.find("+fma") != std::string::npos || target.rfind("aarch64", 0) == 0) {
    EXPECT_EQ(run(fma), std::vector<float>(kN, std::ldexp(1.0f, -26)));
  } else {
    GTEST_SKIP() << "this CPU has no FMA (" << target << "): llvm.fmuladd rounds twice here";
  }
}

TEST_F(CpuBackendTest, FusedAccumulationsMatchTheSumsTheyReplace) {
  // A matmul's reduction with fused accumulations: within float32 rounding of the plain sums.
  constexpr int kM = 9, kK = 300, kN = 13;
  const v1::Graph matmul = testing::Matmul(kM, kK, kN);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> x(kM * kK), y(kK * kN);
  for (float& v : x) v = value(rng);
  for (float& v : y) v = value(rng);
  RenderOptions fma;
  fma.allow_fma = true;
  auto spec = testing::RenderOn(*device_, matmul, fma);
  UOPD_ASSERT_OK(spec);
  EXPECT_NE(spec->src.find("@llvm.fmuladd."), std::string::npos) << spec->src;
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(kM * kN)), HostBuffer::Of(x),
                                  HostBuffer::Of(y)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, matmul, bufs, {}, fma));
  const std::vector<float> got = bufs[0].As<float>();
  for (int i = 0; i < kM; ++i) {
    for (int j = 0; j < kN; ++j) {
      double want = 0;
      for (int k = 0; k < kK; ++k) want += double{x[i * kK + k]} * y[k * kN + j];
      EXPECT_NEAR(got[i * kN + j], want, 1e-4) << i << ", " << j;
    }
  }
}

// int8 -> uint64 -> float64 in a vectorized loop with a tail: LLVM 19's x86 backend turned the
// vector uitofp of sign-extended bytes into a conversion of the bytes as unsigned (-100 gave
// 156.0); unsigned-to-float casts avoid uitofp.
TEST_F(CpuBackendTest, UnsignedToFloatCastsAreExactInVectorLoops) {
  constexpr int kN = 37;
  GraphBuilder g;
  int out64 = g.Buffer(0, DType::FLOAT64, kN);
  int r = g.Range(g.Index(kN), 0);
  int in = g.Buffer(1, DType::INT8, kN);
  int out32 = g.Buffer(2, DType::FLOAT32, kN);
  int wide = g.Node(Node::CAST, DType::UINT64, {g.Load(in, r)});
  v1::Graph wire =
      g.Sink({g.End(g.Store(g.Target(out64, r), g.Node(Node::CAST, DType::FLOAT64, {wide})), {r}),
              g.End(g.Store(g.Target(out32, r), g.Node(Node::CAST, DType::FLOAT32, {wide})), {r})});
  std::vector<int8_t> x(kN);
  for (int i = 0; i < kN; ++i) x[i] = static_cast<int8_t>(i * 37 - 100);
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<double>(kN)), HostBuffer::Of(x),
                                  HostBuffer::Of(std::vector<float>(kN))};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  for (int i = 0; i < kN; ++i) {
    const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(x[i]));
    EXPECT_EQ(bufs[0].As<double>()[i], static_cast<double>(u))
        << "element " << i << ": " << int{x[i]};
    EXPECT_EQ(bufs[2].As<float>()[i], static_cast<float>(u))
        << "element " << i << ": " << int{x[i]};
  }
}

// A sum starts from +0.0: a row of -0.0 sums to +0.0, whatever order the vectorized reduction
// takes (with `nsz`, LLVM dropped the starting +0.0 and the sum came out -0.0, which a BITCAST
// shows).
TEST_F(CpuBackendTest, SumsOfNegativeZerosArePositiveZero) {
  constexpr int kRows = 37, kK = 64;
  GraphBuilder g;
  int out = g.Buffer(0, DType::INT64, kRows);
  int r = g.Range(g.Index(kRows), 0);
  int in = g.Buffer(1, DType::FLOAT64, kRows * kK);
  int k = g.Range(g.Index(kK), 1, v1::RangeArg::REDUCE);
  int idx = g.RowMajor(r, kK, k);
  int sum = g.Reduce(Node::ADD, DType::FLOAT64, g.Load(in, idx), {k});
  v1::Graph wire =
      g.Sink({g.End(g.Store(g.Target(out, r), g.Node(Node::BITCAST, DType::INT64, {sum})), {r})});
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<int64_t>(kRows, -1)),
                                  HostBuffer::Of(std::vector<double>(kRows * kK, -0.0))};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  EXPECT_EQ(bufs[0].As<int64_t>(), std::vector<int64_t>(kRows, 0)) << "the bits of +0.0";
}

TEST_F(CpuBackendTest, GathersThroughLoadedIndicesWithRunTimeChecks) {
  auto spec = testing::RenderOn(*device_, Gather());
  UOPD_ASSERT_OK(spec);
  EXPECT_EQ(spec->guarded_accesses, 1);
  std::vector<float> table = {10, 11, 12, 13, 14, 15, 16, 17};
  std::vector<HostBuffer> ok = {HostBuffer::Of(std::vector<float>(4, 0)), HostBuffer::Of(table),
                                HostBuffer::Of(std::vector<int32_t>{7, 0, 3, 3})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, Gather(), ok));
  EXPECT_EQ(ok[0].As<float>(), (std::vector<float>{17, 10, 13, 13}));
  for (int32_t bad : {8, -1}) {
    std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(4, 0)), HostBuffer::Of(table),
                                    HostBuffer::Of(std::vector<int32_t>{0, bad, 1, 2})};
    EXPECT_TRUE(StatusIs(testing::RunOn(*device_, Gather(), bufs), absl::StatusCode::kOutOfRange,
                         {"kernel gather", "buffer slot 1"}))
        << "index " << bad;
  }
  // Indices of other integer widths are widened or narrowed to the index type.
  std::vector<HostBuffer> wide = {HostBuffer::Of(std::vector<float>(4, 0)), HostBuffer::Of(table),
                                  HostBuffer::Of(std::vector<int64_t>{1, 2, 3, 4})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, Gather(DType::INT64), wide));
  EXPECT_EQ(wide[0].As<float>(), (std::vector<float>{11, 12, 13, 14}));
  std::vector<HostBuffer> narrow = {HostBuffer::Of(std::vector<float>(4, 0)), HostBuffer::Of(table),
                                    HostBuffer::Of(std::vector<uint8_t>{5, 6, 7, 0})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, Gather(DType::UINT8), narrow));
  EXPECT_EQ(narrow[0].As<float>(), (std::vector<float>{15, 16, 17, 10}));
}

// A bool vector cast to float (max-pool gradients count the window positions equal to the max)
// is one select: spelled lane by lane it was an extract, a convert and an insert per lane, and
// r_2048_2_5_5_2_2n1 of tinygrad's CNN training step ran 2.5x its time vectorized.
TEST_F(CpuBackendTest, MaskCastsToFloatStayVectors) {
  constexpr int kRows = 8, kLanes = 4, kN = kRows * kLanes;
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, kN);
  int a = g.Buffer(1, DType::FLOAT32, kN);
  int b = g.Buffer(2, DType::FLOAT32, kN);
  int row = g.Range(g.Index(kRows), 0);
  int lane = g.Range(g.Index(kLanes), 1, v1::RangeArg::UPCAST);
  int idx = g.RowMajor(row, kLanes, lane);
  int less = g.Node(Node::CMPLT, DType::BOOL, {g.Load(a, idx), g.Load(b, idx)});
  v1::Graph wire = g.Sink({g.End(
      g.Store(g.Target(out, idx), g.Node(Node::CAST, DType::FLOAT32, {less})), {row, lane})});
  auto spec = testing::RenderOn(*device_, wire);
  UOPD_ASSERT_OK(spec);
  EXPECT_NE(spec->src.find("select <4 x i1>"), std::string::npos) << spec->src;
  EXPECT_EQ(spec->src.find("uitofp i1"), std::string::npos) << spec->src;
  std::vector<float> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i % 5);
    y[i] = static_cast<float>(i % 3);
  }
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(kN, -1.0f)), HostBuffer::Of(x),
                                  HostBuffer::Of(y)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  for (int i = 0; i < kN; ++i) EXPECT_EQ(bufs[0].As<float>()[i], x[i] < y[i] ? 1.0f : 0.0f) << i;
}

// out[u0, u1, i] = sum_k x[k, u0, i] * y[k, u1, i] with u0 and u1 UPCAST by 5: 25 scalar
// accumulators in the k loop, whose loads all stride over k (a convolution's input gradient has
// this shape with tinygrad's opts). Without AVX-512 the loop vectorizer is kept out of such a
// loop (widened, the tile spilled: tinygrad's CNN input gradient ran 93 ms against tinygrad's 42
// on Zen 2, 42 ms with the SLP vectorizer), other loops keep it, and the result is the same.
TEST_F(CpuBackendTest, RegisterTilesAreLeftToTheSlpVectorizerWithoutAvx512) {
  constexpr int kTile = 5, kK = 64, kCols = 8;
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, kTile * kTile * kCols);
  int xs = g.Buffer(1, DType::FLOAT32, kK * kTile * kCols);
  int ys = g.Buffer(2, DType::FLOAT32, kK * kTile * kCols);
  int col = g.Range(g.Index(kCols), 0);
  int u0 = g.Range(g.Index(kTile), 1, v1::RangeArg::UPCAST);
  int u1 = g.Range(g.Index(kTile), 2, v1::RangeArg::UPCAST);
  int k = g.Range(g.Index(kK), 3, v1::RangeArg::REDUCE);
  auto at = [&](int outer, int inner) {
    return g.RowMajor(g.RowMajor(outer, kTile, inner), kCols, col);
  };
  int product = g.Node(Node::MUL, DType::FLOAT32, {g.Load(xs, at(k, u0)), g.Load(ys, at(k, u1))});
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, product, {k});
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, at(u0, u1)), sum), {col, u0, u1})});
  auto ast = DecodeKernelAst(wire);
  UOPD_ASSERT_OK(ast);
  const std::string kNoVectorize = "!{!\"llvm.loop.vectorize.enable\", i1 false}";
  auto widened = LlvmRenderer().Render(*ast, "tile");
  UOPD_ASSERT_OK(widened);
  EXPECT_EQ(widened->src.find(kNoVectorize), std::string::npos) << widened->src;
  LlvmRendererOptions slp;
  slp.max_widened_accumulators = 16;
  auto packed = LlvmRenderer(slp).Render(*ast, "tile");
  UOPD_ASSERT_OK(packed);
  ASSERT_NE(packed->src.find(kNoVectorize), std::string::npos) << packed->src;
  // The no-vectorize node's id, then the loops that name it.
  const size_t md = packed->src.rfind('!', packed->src.find(" = " + kNoVectorize));
  const std::string id = packed->src.substr(md, packed->src.find(' ', md) - md);
  size_t loops = 0, kept_out = 0;
  for (size_t at = packed->src.find("distinct !{"); at != std::string::npos;
       at = packed->src.find("distinct !{", at + 1)) {
    const std::string line = packed->src.substr(at, packed->src.find('\n', at) - at);
    ++loops;
    if (line.find(", " + id + "}") != std::string::npos) ++kept_out;
  }
  EXPECT_EQ(kept_out, 1u) << "only the k loop, of " << loops << ": " << packed->src;
  EXPECT_GT(loops, 1u);
  EXPECT_NE(LlvmRenderer(slp).Identity(), LlvmRenderer().Identity())
      << "different bytes, other keys";

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> x(kK * kTile * kCols), y(kK * kTile * kCols);
  for (float& v : x) v = value(rng);
  for (float& v : y) v = value(rng);
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(kTile * kTile * kCols)),
                                  HostBuffer::Of(x), HostBuffer::Of(y)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  const std::vector<float> got = bufs[0].As<float>();
  for (int a = 0; a < kTile; ++a) {
    for (int b = 0; b < kTile; ++b) {
      for (int c = 0; c < kCols; ++c) {
        double want = 0;
        for (int kk = 0; kk < kK; ++kk) {
          want += double{x[(kk * kTile + a) * kCols + c]} * y[(kk * kTile + b) * kCols + c];
        }
        EXPECT_NEAR(got[(a * kTile + b) * kCols + c], want, 1e-4) << a << ", " << b << ", " << c;
      }
    }
  }
}

// out[8 i + u] = in[2 (8 i + u)] with u an UPCAST by 8: the loads stride by 2 along the vector
// lanes. They are one load of the 15 elements they span and a shuffle (lane by lane they were a
// load and an insert each: ResNet's stride-2 max pool ran 2-4x tinygrad's time on Zen 2), and
// read nothing past the last lane: the input is exactly as long as the last lane needs.
TEST_F(CpuBackendTest, StridedLanesAreOneLoadAndAShuffle) {
  constexpr int kRows = 5, kLanes = 8, kN = kRows * kLanes, kIn = 2 * (kN - 1) + 1;
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, kN);
  int in = g.Buffer(1, DType::FLOAT32, kIn);
  int row = g.Range(g.Index(kRows), 0);
  int lane = g.Range(g.Index(kLanes), 1, v1::RangeArg::UPCAST);
  int idx = g.RowMajor(row, kLanes, lane);
  int strided = g.Node(Node::MUL, DType::INDEX, {idx, g.Index(2)});
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, idx), g.Load(in, strided)), {row, lane})});
  auto spec = testing::RenderOn(*device_, wire);
  UOPD_ASSERT_OK(spec);
  EXPECT_NE(spec->src.find("load <15 x float>"), std::string::npos) << spec->src;
  EXPECT_NE(spec->src.find("<8 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14>"),
            std::string::npos)
      << spec->src;
  std::vector<float> x(kIn);
  for (int i = 0; i < kIn; ++i) x[i] = static_cast<float>(i);
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(kN, -1.0f)), HostBuffer::Of(x)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  for (int i = 0; i < kN; ++i) EXPECT_EQ(bufs[0].As<float>()[i], 2.0f * i) << i;
}

// out[i] = in[2i - 1] where 0 <= 2i - 1 < size(in), else 0: a padded stride-2 convolution's input
// row. Its lanes are read as masked loads of the span, each lane under its own mask, not one by
// one (ResNet-18's r_256_2_7_7_256_3_3 on Zen 2: 4.9 -> 2.3 ms); the first lane of the first row
// and the last lanes of the last point outside the buffer and must read nothing.
TEST_F(CpuBackendTest, MaskedStridedLanesAreMaskedLoadsOfTheSpan) {
  constexpr int kRows = 5, kLanes = 8, kN = kRows * kLanes, kIn = 2 * kN - 6;
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, kN);
  int in = g.Buffer(1, DType::FLOAT32, kIn);
  int row = g.Range(g.Index(kRows), 0);
  int lane = g.Range(g.Index(kLanes), 1, v1::RangeArg::UPCAST);
  int idx = g.RowMajor(row, kLanes, lane);
  int at = g.Node(Node::ADD, DType::INDEX,
                  {g.Node(Node::MUL, DType::INDEX, {idx, g.Index(2)}), g.Index(-1)});
  int valid = g.Node(Node::AND, DType::BOOL,
                     {g.Node(Node::CMPNE, DType::BOOL,
                             {g.Node(Node::CMPLT, DType::BOOL, {at, g.Index(0)}), g.Bool(true)}),
                      g.Node(Node::CMPLT, DType::BOOL, {at, g.Index(kIn)})});
  int gated = g.Node(Node::WHERE, DType::INDEX, {valid, at, g.Invalid()});
  v1::Graph wire = g.Sink({g.End(g.Store(g.Target(out, idx), g.Load(in, gated)), {row, lane})});
  auto spec = testing::RenderOn(*device_, wire);
  UOPD_ASSERT_OK(spec);
  // One 16-lane masked load with 512-bit vectors, two of 8 with 256 (the host's width).
  EXPECT_NE(spec->src.find("float> @llvm.masked.load.v"), std::string::npos) << spec->src;
  EXPECT_NE(spec->src.find("<8 x i32> <i32 0, i32 2, i32 4, i32 6, i32 8, i32 10, i32 12, i32 14>"),
            std::string::npos)
      << spec->src;
  std::vector<float> x(kIn);
  for (int i = 0; i < kIn; ++i) x[i] = static_cast<float>(i + 1);
  std::vector<HostBuffer> bufs = {HostBuffer::Of(std::vector<float>(kN, -1.0f)), HostBuffer::Of(x)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, wire, bufs));
  for (int i = 0; i < kN; ++i) {
    const int j = 2 * i - 1;
    EXPECT_EQ(bufs[0].As<float>()[i], j >= 0 && j < kIn ? x[j] : 0.0f) << i;
  }
}

TEST_F(CpuBackendTest, RejectsRangeUsedOutsideItsLoop) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 4);
  int r = g.Range(g.Index(4), 0);
  v1::Graph wire = g.Sink({g.Store(g.Target(out, r), g.Float(DType::FLOAT32, 1.0))});
  EXPECT_TRUE(StatusIs(testing::RenderOn(*device_, wire), absl::StatusCode::kInvalidArgument,
                       {"RANGE is used outside the END or REDUCE that closes it", "%"}));
}

}  // namespace
}  // namespace uopd
