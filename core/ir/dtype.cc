#include "core/ir/dtype.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace uopd {
namespace {

struct ScalarInfo {
  absl::string_view name;
  absl::string_view short_name;
  int item_size;
};

constexpr std::array<ScalarInfo, kMaxScalar + 1> kScalars = {{
    {"?", "?", 0},
    {"VOID", "void", 0},
    {"INDEX", "index", 8},
    {"BOOL", "bool", 1},
    {"INT8", "char", 1},
    {"UINT8", "uchar", 1},
    {"INT16", "short", 2},
    {"UINT16", "ushort", 2},
    {"INT32", "int", 4},
    {"UINT32", "uint", 4},
    {"INT64", "long", 8},
    {"UINT64", "ulong", 8},
    {"FP8E4M3", "fp8e4m3", 1},
    {"FP8E5M2", "fp8e5m2", 1},
    {"FLOAT16", "half", 2},
    {"BFLOAT16", "bfloat16", 2},
    {"FLOAT32", "float", 4},
    {"FLOAT64", "double", 8},
    {"?", "?", 0},
    {"?", "?", 0},
    {"FP8E4M3FNUZ", "fp8e4m3fnuz", 1},
    {"FP8E5M2FNUZ", "fp8e5m2fnuz", 1},
}};

const ScalarInfo& Info(Scalar scalar) {
  int index = static_cast<int>(scalar);
  return kScalars[index >= 1 && index <= kMaxScalar ? index : 0];
}

}  // namespace

absl::string_view ScalarName(Scalar scalar) { return Info(scalar).name; }
absl::string_view ScalarShortName(Scalar scalar) { return Info(scalar).short_name; }
int ScalarItemSize(Scalar scalar) { return Info(scalar).item_size; }

std::optional<Scalar> ScalarFromName(absl::string_view name) {
  for (int i = 1; i <= kMaxScalar; ++i) {
    if (kScalars[i].name == name && name != "?") return static_cast<Scalar>(i);
  }
  return std::nullopt;
}

std::optional<Scalar> ScalarFromNumber(int number) {
  if (number < 1 || number > kMaxScalar || kScalars[number].name == "?") return std::nullopt;
  return static_cast<Scalar>(number);
}

bool IsFloat(Scalar scalar) {
  switch (scalar) {
    case Scalar::kFloat16:
    case Scalar::kBfloat16:
    case Scalar::kFloat32:
    case Scalar::kFloat64:
      return true;
    default:
      return IsFp8(scalar);
  }
}

bool IsNarrowFloat(Scalar scalar) {
  return scalar == Scalar::kFloat16 || scalar == Scalar::kBfloat16 || IsFp8(scalar);
}

bool IsFp8(Scalar scalar) {
  return scalar == Scalar::kFp8E4M3 || scalar == Scalar::kFp8E5M2 ||
         scalar == Scalar::kFp8E4M3Fnuz || scalar == Scalar::kFp8E5M2Fnuz;
}

bool IsInt(Scalar scalar) {
  switch (scalar) {
    case Scalar::kIndex:
    case Scalar::kInt8:
    case Scalar::kUint8:
    case Scalar::kInt16:
    case Scalar::kUint16:
    case Scalar::kInt32:
    case Scalar::kUint32:
    case Scalar::kInt64:
    case Scalar::kUint64:
      return true;
    default:
      return false;
  }
}

bool IsUnsigned(Scalar scalar) {
  switch (scalar) {
    case Scalar::kUint8:
    case Scalar::kUint16:
    case Scalar::kUint32:
    case Scalar::kUint64:
      return true;
    default:
      return false;
  }
}

int IntBits(Scalar scalar) {
  if (scalar == Scalar::kBool) return 1;
  return ScalarItemSize(scalar) * 8;
}

std::string DTypeToString(const DType& dtype) {
  std::string out = absl::AsciiStrToLower(ScalarName(dtype.scalar));
  if (dtype.count != 1) absl::StrAppend(&out, "x", dtype.count);
  if (dtype.ptr) {
    absl::StrAppend(&out, "*[", dtype.size, "]");
    if (dtype.addrspace == AddrSpace::kLocal) absl::StrAppend(&out, ":LOCAL");
    if (dtype.addrspace == AddrSpace::kReg) absl::StrAppend(&out, ":REG");
  }
  return out;
}

}  // namespace uopd
