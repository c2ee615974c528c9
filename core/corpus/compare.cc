#include "core/corpus/compare.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/kernel_support.h"

namespace uopd {
namespace {

template <typename T>
T Read(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

std::string Show(Scalar scalar, const char* bytes) {
  if (IsFloat(scalar)) return absl::StrCat(ElementAsDouble(scalar, bytes));
  switch (scalar) {
    case Scalar::kUint64:
      return absl::StrCat(Read<uint64_t>(bytes));
    case Scalar::kInt64:
      return absl::StrCat(Read<int64_t>(bytes));
    default:
      return absl::StrCat(static_cast<int64_t>(ElementAsDouble(scalar, bytes)));
  }
}

}  // namespace

double ElementAsDouble(Scalar scalar, const char* bytes) {
  switch (scalar) {
    case Scalar::kBool:
      return Read<uint8_t>(bytes);
    case Scalar::kInt8:
      return Read<int8_t>(bytes);
    case Scalar::kUint8:
      return Read<uint8_t>(bytes);
    case Scalar::kInt16:
      return Read<int16_t>(bytes);
    case Scalar::kUint16:
      return Read<uint16_t>(bytes);
    case Scalar::kInt32:
      return Read<int32_t>(bytes);
    case Scalar::kUint32:
      return Read<uint32_t>(bytes);
    case Scalar::kInt64:
    case Scalar::kIndex:
      return static_cast<double>(Read<int64_t>(bytes));
    case Scalar::kUint64:
      return static_cast<double>(Read<uint64_t>(bytes));
    case Scalar::kFloat16:
      return uopd_f16_to_f32(Read<uint16_t>(bytes));
    case Scalar::kBfloat16:
      return uopd_bf16_to_f32(Read<uint16_t>(bytes));
    case Scalar::kFp8E4M3:
      return uopd_fp8e4m3_to_f32(Read<uint8_t>(bytes));
    case Scalar::kFp8E5M2:
      return uopd_fp8e5m2_to_f32(Read<uint8_t>(bytes));
    case Scalar::kFp8E4M3Fnuz:
      return uopd_fp8e4m3fnuz_to_f32(Read<uint8_t>(bytes));
    case Scalar::kFp8E5M2Fnuz:
      return uopd_fp8e5m2fnuz_to_f32(Read<uint8_t>(bytes));
    case Scalar::kFloat32:
      return Read<float>(bytes);
    case Scalar::kFloat64:
      return Read<double>(bytes);
    default:
      return 0;
  }
}

std::optional<std::string> CompareBuffers(Scalar scalar, const std::string& got,
                                          const std::string& expected, Tolerance tolerance) {
  if (got.size() != expected.size()) {
    return absl::StrCat("size differs: got ", got.size(), " bytes, expected ", expected.size());
  }
  const size_t item = ScalarItemSize(scalar);
  if (item == 0) return std::nullopt;
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i * item < got.size(); ++i) {
    const char* g = got.data() + i * item;
    const char* e = expected.data() + i * item;
    bool same;
    if (IsFloat(scalar)) {
      double gv = ElementAsDouble(scalar, g), ev = ElementAsDouble(scalar, e);
      if (std::isnan(ev) || std::isnan(gv)) {
        same = std::isnan(ev) && std::isnan(gv);
      } else if (std::isinf(ev) || std::isinf(gv)) {
        same = gv == ev;
      } else {
        same = std::fabs(gv - ev) <= tolerance.atol + tolerance.rtol * std::fabs(ev);
      }
    } else {
      same = std::memcmp(g, e, item) == 0;
    }
    if (!same && mismatches++ == 0) first = i;
  }
  if (mismatches == 0) return std::nullopt;
  const char* g = got.data() + first * item;
  const char* e = expected.data() + first * item;
  return absl::StrCat("element ", first, ": got ", Show(scalar, g), ", expected ", Show(scalar, e),
                      " (", mismatches, " of ", got.size() / item, " elements differ)");
}

}  // namespace uopd
