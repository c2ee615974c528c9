// The scalar helpers kernels share: exact small-float conversions and THREEFRY's known answers.
#include "core/util/kernel_support.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace uopd {
namespace {

TEST(Threefry, MatchesTheCorpusAndRandom123Vectors) {
  EXPECT_EQ(uopd_threefry(0xc86746ab88fd155bull, 0x4ded5b790c1a9040ull), 0x5b1dabce09514f13ull);
  EXPECT_EQ(uopd_threefry(0, 0), 0x99ba4efe6b200159ull);
  EXPECT_EQ(uopd_threefry(~0ull, ~0ull), 0xbb002be71cb996fcull);
  EXPECT_EQ(uopd_threefry(0x85a308d3243f6a88ull, 0x0370734413198a2eull), 0x483df7a0c4923a9cull);
}

TEST(Float16, RoundsToNearestEvenAndOverflowsToInfinity) {
  EXPECT_EQ(uopd_f64_to_f16(1.0), 0x3c00u);
  EXPECT_EQ(uopd_f64_to_f16(-2.0), 0xc000u);
  EXPECT_EQ(uopd_f64_to_f16(65504.0), 0x7bffu) << "largest finite";
  EXPECT_EQ(uopd_f64_to_f16(65520.0), 0x7c00u) << "halfway past the largest rounds to infinity";
  EXPECT_EQ(uopd_f64_to_f16(1.0 + 1.0 / 2048), 0x3c00u) << "tie rounds to even";
  EXPECT_EQ(uopd_f64_to_f16(1.0 + 3.0 / 2048), 0x3c02u) << "tie rounds to even (up)";
  EXPECT_EQ(uopd_f64_to_f16(std::ldexp(1.0, -24)), 0x0001u) << "smallest subnormal";
  EXPECT_EQ(uopd_f64_to_f16(std::ldexp(1.0, -26)), 0x0000u);
  EXPECT_EQ(uopd_f64_to_f16(std::numeric_limits<double>::infinity()), 0x7c00u);
  EXPECT_EQ(uopd_f64_to_f16(std::nan("")) & 0x7c00u, 0x7c00u);
}

TEST(Float16, WidensEveryEncodingExactlyAndRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = uopd_f16_to_f32(bits);
    if (std::isnan(f)) {
      EXPECT_EQ(bits & 0x7c00u, 0x7c00u) << bits;
      continue;
    }
    EXPECT_EQ(uopd_f64_to_f16(f), bits) << "bits " << bits << " -> " << f;
  }
}

TEST(Bfloat16, IsTheUpperHalfOfFloat32RoundedToNearestEven) {
  EXPECT_EQ(uopd_f64_to_bf16(1.0), 0x3f80u);
  EXPECT_EQ(uopd_bf16_to_f32(0x3f80u), 1.0f);
  float x = 1.0f + 1.0f / 256;  // halfway between two bfloat16 values: ties to even
  EXPECT_EQ(uopd_f64_to_bf16(x), 0x3f80u);
  for (uint32_t bits = 0; bits < 0x10000; bits += 7) {
    float f = uopd_bf16_to_f32(bits);
    if (!std::isnan(f)) {
      EXPECT_EQ(uopd_f64_to_bf16(f), bits) << bits;
    }
  }
}

TEST(Fp8, RoundTripsAndSaturates) {
  for (uint32_t bits = 0; bits < 0x100; ++bits) {
    float e4 = uopd_fp8e4m3_to_f32(bits);
    if (!std::isnan(e4)) {
      EXPECT_EQ(uopd_f64_to_fp8e4m3(e4), bits) << bits;
    }
    float e5 = uopd_fp8e5m2_to_f32(bits);
    if (!std::isnan(e5) && !std::isinf(e5)) {  // an infinity saturates (below)
      EXPECT_EQ(uopd_f64_to_fp8e5m2(e5), bits) << bits;
    }
  }
  EXPECT_EQ(uopd_fp8e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(uopd_f64_to_fp8e4m3(1e6), 0x7eu) << "e4m3 saturates";
  // As tinygrad 0.14 converts (its CPU device gives 0x7b for 57344 + 57344, 1e6 and inf).
  EXPECT_EQ(uopd_f64_to_fp8e5m2(57344.0 + 57344.0), 0x7bu) << "e5m2 saturates";
  EXPECT_EQ(uopd_f64_to_fp8e5m2(-1e6), 0xfbu);
  EXPECT_EQ(uopd_f64_to_fp8e5m2(INFINITY), 0x7bu);
  EXPECT_EQ(uopd_f64_to_fp8e5m2(61439.0), 0x7bu) << "below the rounding midpoint to 2^16";
  EXPECT_EQ(uopd_fp8e5m2_to_f32(0x7c), INFINITY) << "an infinity still loads as one";
  EXPECT_TRUE(std::isnan(uopd_fp8e5m2_to_f32(uopd_f64_to_fp8e5m2(NAN))));
}

// tinygrad 0.14's fp8e4m3fnuz and fp8e5m2fnuz (dtype.py's float_to_fp8 and fp8_to_float):
// bias 8 and 16, every exponent finite, 0x80 the one NaN, no negative zero.
TEST(Fp8Fnuz, RoundTripsSaturatesAndHasNoNegativeZero) {
  for (uint32_t bits = 0; bits < 0x100; ++bits) {
    if (bits == 0x80) continue;
    EXPECT_EQ(uopd_f64_to_fp8e4m3fnuz(uopd_fp8e4m3fnuz_to_f32(bits)), bits) << bits;
    EXPECT_EQ(uopd_f64_to_fp8e5m2fnuz(uopd_fp8e5m2fnuz_to_f32(bits)), bits) << bits;
  }
  EXPECT_EQ(uopd_fp8e4m3fnuz_to_f32(0x40), 1.0f);
  EXPECT_EQ(uopd_fp8e5m2fnuz_to_f32(0x40), 1.0f);
  EXPECT_EQ(uopd_fp8e4m3fnuz_to_f32(0x7f), 240.0f);
  EXPECT_EQ(uopd_fp8e5m2fnuz_to_f32(0xff), -57344.0f);
  EXPECT_EQ(uopd_fp8e4m3fnuz_to_f32(0x01), std::ldexp(1.0f, -10)) << "the smallest subnormal";
  EXPECT_TRUE(std::isnan(uopd_fp8e4m3fnuz_to_f32(0x80)));
  EXPECT_TRUE(std::isnan(uopd_fp8e5m2fnuz_to_f32(0x80)));
  EXPECT_EQ(uopd_f64_to_fp8e4m3fnuz(NAN), 0x80u);
  EXPECT_EQ(uopd_f64_to_fp8e5m2fnuz(-NAN), 0x80u);
  EXPECT_EQ(uopd_f64_to_fp8e4m3fnuz(INFINITY), 0x7fu) << "infinities saturate";
  EXPECT_EQ(uopd_f64_to_fp8e4m3fnuz(1e6), 0x7fu);
  EXPECT_EQ(uopd_f64_to_fp8e5m2fnuz(-INFINITY), 0xffu);
  EXPECT_EQ(uopd_f64_to_fp8e4m3fnuz(-0.0), 0x00u) << "no negative zero";
  EXPECT_EQ(uopd_f64_to_fp8e5m2fnuz(-1e-30), 0x00u) << "an underflow is +0";
  EXPECT_EQ(uopd_f64_to_fp8e4m3fnuz(248.0), 0x7fu) << "the midpoint past 240 saturates";
  EXPECT_EQ(uopd_f64_to_fp8e4m3fnuz(1.0 + 1.0 / 16), 0x40u) << "ties to even";
}

}  // namespace
}  // namespace uopd
