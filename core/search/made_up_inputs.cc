#include "core/search/made_up_inputs.h"

#include <algorithm>
#include <cstring>

namespace uopd {

void FillMadeUpElement(Scalar scalar, std::mt19937_64& rng, char* out) {
  const uint64_t r = rng();
  const uint64_t sign = r & 1, bits = r >> 8;
  auto store = [&](auto value) { std::memcpy(out, &value, sizeof(value)); };
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
    case Scalar::kFp8E4M3:  // exponent 5..7 of bias 7, 1 of 3 mantissa bits
      store(static_cast<uint8_t>(sign << 7 | (5 + bits % 3) << 3 | ((bits >> 8) % 2) << 2));
      return;
    case Scalar::kFp8E5M2:  // exponent 13..15 of bias 15, no mantissa bits
      store(static_cast<uint8_t>(sign << 7 | (13 + bits % 3) << 2));
      return;
    case Scalar::kFp8E4M3Fnuz:  // exponent 6..8 of bias 8, 1 of 3 mantissa bits
      store(static_cast<uint8_t>(sign << 7 | (6 + bits % 3) << 3 | ((bits >> 8) % 2) << 2));
      return;
    case Scalar::kFp8E5M2Fnuz:  // exponent 14..16 of bias 16, no mantissa bits
      store(static_cast<uint8_t>(sign << 7 | (14 + bits % 3) << 2));
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
