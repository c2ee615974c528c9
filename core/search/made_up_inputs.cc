#include "core/search/made_up_inputs.h"

#include <algorithm>
#include <cstring>

namespace uopd {

void FillMadeUpElement(Scalar scalar, std::mt19937_64& rng, char* out) {
  const uint64_t r = rng();
  const uint64_t sign = r & 1, bits = r >> 8;
  auto store = [&](auto value) { std::memcpy(out, &value, sizeof(value)); };
  // An fp8 value of exponent bias-2 .. bias, its top `drawn` of `mantissa` bits drawn.
  auto fp8 = [&](int bias, int mantissa, int drawn) {
    return static_cast<uint8_t>(sign << 7 | (bias - 2 + bits % 3) << mantissa |
                                ((bits >> 8) % (1u << drawn)) << (mantissa - drawn));
  };
  switch (scalar) {
    case Scalar::kFloat64:
      store((sign ? -1.0 : 1.0) * (0.25 + 1.75 * static_cast<double>(bits % 1000000) / 1e6));
      return;
    case Scalar::kFloat32:
      store((sign ? -1.0f : 1.0f) * (0.25f + 1.75f * static_cast<float>(bits % 1000000) / 1e6f));
      return;
    case Scalar::kFloat16:  // exponent 13..15 of bias 15, 4 of 10 mantissa bits
      store(static_cast<uint16_t>(sign << 15 | (13 + bits % 3) << 10 | ((bits >> 8) % 16) << 6));
      return;
    case Scalar::kBfloat16:  // exponent 125..127 of bias 127, 3 of 7 mantissa bits
      store(static_cast<uint16_t>(sign << 15 | (125 + bits % 3) << 7 | ((bits >> 8) % 8) << 4));
      return;
    case Scalar::kFp8E4M3:  // 1 of 3 mantissa bits
      store(fp8(/*bias=*/7, /*mantissa=*/3, /*drawn=*/1));
      return;
    case Scalar::kFp8E5M2:  // no mantissa bits
      store(fp8(/*bias=*/15, /*mantissa=*/2, /*drawn=*/0));
      return;
    case Scalar::kFp8E4M3Fnuz:  // fnuz: one more bias
      store(fp8(/*bias=*/8, /*mantissa=*/3, /*drawn=*/1));
      return;
    case Scalar::kFp8E5M2Fnuz:
      store(fp8(/*bias=*/16, /*mantissa=*/2, /*drawn=*/0));
      return;
    case Scalar::kBool:
      store(static_cast<uint8_t>(sign));
      return;
    default: {
      const int64_t value = static_cast<int64_t>(bits % 16);
      std::memcpy(out, &value, std::max(1, ScalarItemSize(scalar)));  // little-endian
      return;
    }
  }
}

}  // namespace uopd
