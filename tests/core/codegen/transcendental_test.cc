// EXP2 and LOG2 on the CPU are tinygrad's polynomial decompositions (core/codegen/
// transcendental.h): within 1 (exp2) and 3 (log2) units in the last place of the correctly
// rounded result, with IEEE's special cases, in float32 and float64, and within rounding for
// every float16 input (computed through float32).
#include "core/codegen/transcendental.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/match.h"
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

// out[i] = op(in[i]) over n elements of `dtype`.
std::shared_ptr<const KernelAst> Elementwise(v1::Node::Op op, v1::DType::Scalar dtype, int64_t n) {
  GraphBuilder g;
  int out = g.Buffer(0, dtype, n);
  int i = g.Range(g.Index(n), 0);
  int in = g.Buffer(1, dtype, n);
  int value = g.Node(op, dtype, {g.Load(in, i)});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), value), {i})}));
  EXPECT_TRUE(ast.ok()) << ast.status();
  return *ast;
}

// Units in the last place of `dtype` (mantissa_bits, smallest normal exponent) at `value`.
double Ulp(double value, int mantissa_bits, int min_exponent) {
  int exponent = std::max(std::ilogb(std::fabs(value)), min_exponent);
  return std::ldexp(1.0, exponent - mantissa_bits);
}

float HalfToFloat(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  float magnitude;
  if (exponent == 31) {
    magnitude =
        mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

class TranscendentalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(&pool_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }

  template <typename T>
  std::vector<T> Run(v1::Node::Op op, v1::DType::Scalar dtype, const std::vector<T>& in) {
    std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<T>(in.size())),
                                       HostBuffer::Of(in)};
    auto ast = Elementwise(op, dtype, static_cast<int64_t>(in.size()));
    const std::string src = device_->renderer().Render(ast, "k")->src;
    EXPECT_FALSE(absl::StrContains(src, "llvm.exp2") || absl::StrContains(src, "llvm.log2"));
    absl::Status status = testing::RunAstOn(*device_, ast, buffers);
    EXPECT_TRUE(status.ok()) << status;
    return buffers[0].As<T>();
  }

  // Checks results against `reference` (computed in long double), allowing `max_ulps`, and
  // the special values exactly (NaN for NaN).
  template <typename T>
  void Expect(const std::vector<T>& in, const std::vector<T>& out,
              long double (*reference)(long double), double max_ulps, const char* what) {
    const int mantissa = std::numeric_limits<T>::digits - 1;
    const int min_exp = std::numeric_limits<T>::min_exponent - 1;
    int failures = 0;
    double worst = 0;
    for (size_t i = 0; i < in.size() && failures < 10; ++i) {
      const T want = static_cast<T>(reference(static_cast<long double>(in[i])));
      const T got = out[i];
      if (std::isnan(want) || std::isinf(want) || want == 0) {
        const bool same = std::isnan(want) ? std::isnan(got) : got == want;
        // Results that round to 0 or overflow may land one step before.
        const bool near =
            !std::isnan(want) &&
            std::fabs(static_cast<double>(got) - want) <= max_ulps * Ulp(0, mantissa, min_exp) &&
            want == 0;
        if (!same && !near) {
          ADD_FAILURE() << what << "(" << in[i] << ") = " << got << ", want " << want;
          ++failures;
        }
        continue;
      }
      const double ulps = std::fabs(static_cast<double>(got) - static_cast<double>(want)) /
                          Ulp(want, mantissa, min_exp);
      worst = std::max(worst, ulps);
      if (!(ulps <= max_ulps)) {
        ADD_FAILURE() << what << "(" << in[i] << ") = " << got << ", want " << want << " (" << ulps
                      << " ulps)";
        ++failures;
      }
    }
    std::printf("%s: worst %.2f ulps over %zu inputs\n", what, worst, in.size());
  }

  ThreadPool pool_{1};
  std::unique_ptr<Device> device_;
};

long double Exp2(long double x) { return std::exp2(x); }
long double Log2(long double x) { return std::log2(x); }

template <typename T>
std::vector<T> Inputs(double lo, double hi, std::vector<T> specials) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<T> in = std::move(specials);
  for (int i = 0; i < 200000; ++i) in.push_back(static_cast<T>(uniform(rng)));
  for (int e = static_cast<int>(lo); e <= static_cast<int>(hi); ++e) in.push_back(e);
  return in;
}

template <typename T>
std::vector<T> PositiveInputs(std::vector<T> specials) {
  // Log-uniform over every binade, denormals included.
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  const int lo = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;
  const int hi = std::numeric_limits<T>::max_exponent - 1;
  std::uniform_int_distribution<int> exponent(lo, hi);
  std::vector<T> in = std::move(specials);
  for (int i = 0; i < 200000; ++i) {
    in.push_back(static_cast<T>(std::ldexp(mantissa(rng), exponent(rng))));
  }
  for (int i = -1000; i <= 1000; ++i) in.push_back(static_cast<T>(1.0 + i * 1e-6));  // near 1
  return in;
}

TEST_F(TranscendentalTest, Exp2Float32) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> in = Inputs<float>(
      -155, 130,
      {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 128.0f, -150.0f, 1e-30f});
  Expect(in, Run(v1::Node::EXP2, v1::DType::FLOAT32, in), Exp2, 2.0, "exp2 float32");
}

TEST_F(TranscendentalTest, Log2Float32) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> in =
      PositiveInputs<float>({0.0f, -0.0f, inf, -inf, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::denorm_min(), 1.0f, 2.0f, 0.75f});
  // tinygrad's formula rounds (m-1)*reciprocal(m+1) twice: up to 3 units.
  Expect(in, Run(v1::Node::LOG2, v1::DType::FLOAT32, in), Log2, 3.0, "log2 float32");
}

TEST_F(TranscendentalTest, Exp2AndLog2Float64) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> in =
      Inputs<double>(-1080, 1030, {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()});
  Expect(in, Run(v1::Node::EXP2, v1::DType::FLOAT64, in), Exp2, 2.0, "exp2 float64");
  std::vector<double> positive = PositiveInputs<double>({0.0, -0.0, inf, -1.0});
  Expect(positive, Run(v1::Node::LOG2, v1::DType::FLOAT64, positive), Log2, 3.0, "log2 float64");
}

TEST_F(TranscendentalTest, EveryFloat16Input) {
  std::vector<uint16_t> in(65536);
  for (int i = 0; i < 65536; ++i) in[i] = static_cast<uint16_t>(i);
  for (v1::Node::Op op : {v1::Node::EXP2, v1::Node::LOG2}) {
    std::vector<uint16_t> out = Run(op, v1::DType::FLOAT16, in);
    int failures = 0;
    double worst = 0;
    for (int i = 0; i < 65536 && failures < 10; ++i) {
      const double x = HalfToFloat(in[i]), got = HalfToFloat(out[i]);
      const double want = op == v1::Node::EXP2 ? std::exp2(x) : std::log2(x);
      bool ok;
      if (std::isnan(want)) {
        ok = std::isnan(got);
      } else if (std::isinf(want) || want >= 65520) {
        ok = got == (want > 0 ? 1 : -1) * std::numeric_limits<double>::infinity() ||
             (want < 65536 && got == 65504);
      } else {
        const double ulps = std::fabs(got - want) / Ulp(want, 10, -14);
        worst = std::max(worst, ulps);
        ok = ulps <= 0.51;  // through float32: rounding to half is the only error left
      }
      if (!ok) {
        ADD_FAILURE() << (op == v1::Node::EXP2 ? "exp2" : "log2") << "(" << x << ") = " << got
                      << ", want " << want;
        ++failures;
      }
    }
    std::printf("%s float16: worst %.2f ulps over every input\n",
                op == v1::Node::EXP2 ? "exp2" : "log2", worst);
  }
}

TEST_F(TranscendentalTest, Exp2OfLog2OfNegativesIsNan) {
  // exp2(log2(x)) for x < 0 is NaN: the NaN log2 makes must survive exp2's special cases.
  testing::GraphBuilder g;
  const auto f32 = v1::DType::FLOAT32;
  int out = g.Buffer(0, f32, 6);
  int i = g.Range(g.Index(6), 0);
  int in = g.Buffer(1, f32, 6);
  int value = g.Node(v1::Node::EXP2, f32, {g.Node(v1::Node::LOG2, f32, {g.Load(in, i)})});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), value), {i})}));
  ASSERT_TRUE(ast.ok());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {-1.0f, -2.5f,  nan, -std::numeric_limits<float>::infinity(),
                          4.0f,  -1e-30f};
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(6)), HostBuffer::Of(x)};
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, *ast, buffers));
  std::vector<float> got = buffers[0].As<float>();
  for (int k : {0, 1, 2, 3, 5}) EXPECT_TRUE(std::isnan(got[k])) << x[k] << " -> " << got[k];
  EXPECT_NEAR(got[4], 4.0f, 1e-5f);
}

TEST_F(TranscendentalTest, SpecialValuesOfEveryKindAgreeWithLibm) {
  // Random bit patterns: denormals, NaNs with payloads, infinities, both zeros. (tinygrad's
  // log2 gives -inf for negative denormals below -2^-128; uopd NaN, as libm.)
  std::mt19937 rng(5);
  std::vector<float> x(1 << 16);
  for (float& v : x) {
    const uint32_t bits = rng();
    std::memcpy(&v, &bits, 4);
  }
  for (v1::Node::Op op : {v1::Node::EXP2, v1::Node::LOG2}) {
    std::vector<float> got = Run(op, v1::DType::FLOAT32, x);
    int bad = 0;
    for (size_t k = 0; k < x.size() && bad < 5; ++k) {
      const float want = op == v1::Node::EXP2 ? std::exp2(x[k]) : std::log2(x[k]);
      const bool ok = std::isnan(want) ? std::isnan(got[k])
                      : (std::isinf(want) || want == 0)
                          ? got[k] == want
                          : std::fabs(got[k] - want) <= 4 * std::fabs(want) * 1.2e-7f;
      if (!ok) {
        ++bad;
        ADD_FAILURE() << (op == v1::Node::EXP2 ? "exp2(" : "log2(") << x[k] << ") = " << got[k]
                      << ", want " << want;
      }
    }
  }
}

TEST(DecomposeTranscendentals, LeavesOtherKernelsAlone) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, 4);
  int i = g.Range(g.Index(4), 0);
  int in = g.Buffer(1, v1::DType::FLOAT32, 4);
  int value = g.Node(v1::Node::SQRT, v1::DType::FLOAT32, {g.Load(in, i)});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), value), {i})}));
  ASSERT_TRUE(ast.ok());
  EXPECT_EQ(DecomposeTranscendentals(*ast), *ast);
}

}  // namespace
}  // namespace uopd
