// DType: the scalar, vector and pointer types of kernel ASTs (IR.md). Plain value type.
#ifndef UOPD_CORE_IR_DTYPE_H_
#define UOPD_CORE_IR_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace uopd {

// Numbered as uopd.v1.DType.Scalar so decoding is a checked cast.
enum class Scalar : uint8_t {
  kVoid = 1,
  kIndex = 2,
  kBool = 3,
  kInt8 = 4,
  kUint8 = 5,
  kInt16 = 6,
  kUint16 = 7,
  kInt32 = 8,
  kUint32 = 9,
  kInt64 = 10,
  kUint64 = 11,
  kFp8E4M3 = 12,
  kFp8E5M2 = 13,
  kFloat16 = 14,
  kBfloat16 = 15,
  kFloat32 = 16,
  kFloat64 = 17,
  // 18 and 19 are the wire's WEAKINT and WEAKFLOAT, which the 0.14 translation resolves.
  kFp8E4M3Fnuz = 20,
  kFp8E5M2Fnuz = 21,
};
inline constexpr int kMaxScalar = 21;

enum class AddrSpace : uint8_t { kGlobal = 0, kLocal = 1, kReg = 2 };

// The scalar's name as IR.md spells it ("FLOAT32"); "?" for a value outside the enum.
absl::string_view ScalarName(Scalar scalar);
// The inverse of ScalarName; nullopt for an unknown name.
std::optional<Scalar> ScalarFromName(absl::string_view name);
// The scalar a wire number names; nullopt for a number that names none (0, gaps, too large).
std::optional<Scalar> ScalarFromNumber(int number);
// tinygrad's short name ("float", "int", "uchar"), for printing.
absl::string_view ScalarShortName(Scalar scalar);

// Bytes per element in memory; 0 for VOID, 8 for INDEX (its widest lowering).
int ScalarItemSize(Scalar scalar);
bool IsFloat(Scalar scalar);
// Integer types, INDEX included; BOOL excluded.
bool IsInt(Scalar scalar);
bool IsUnsigned(Scalar scalar);
// float16, bfloat16 and the fp8 formats: few CPUs compute in them, so backends compute in
// float32 and round after every operation.
bool IsNarrowFloat(Scalar scalar);
// The four fp8 formats (OCP e4m3 and e5m2, and their fnuz variants).
bool IsFp8(Scalar scalar);
// INT and BOOL types and INDEX: everything whose values are integers.
inline bool IsIntLike(Scalar scalar) { return IsInt(scalar) || scalar == Scalar::kBool; }
// The width of an integer type in bits (INDEX: 64, BOOL: 1).
int IntBits(Scalar scalar);

struct DType {
  Scalar scalar = Scalar::kVoid;
  int32_t count = 1;  // vector width
  bool ptr = false;
  int64_t size = -1;  // pointer dtypes: element count, -1 when unbounded
  AddrSpace addrspace = AddrSpace::kGlobal;

  static DType Of(Scalar scalar) { return DType{scalar}; }
  static DType Ptr(Scalar scalar, int64_t size) {
    return DType{scalar, 1, true, size, AddrSpace::kGlobal};
  }
  // The element type of a pointer dtype (or the dtype itself).
  DType Base() const { return DType{scalar, count}; }
  bool IsVoid() const { return !ptr && scalar == Scalar::kVoid; }

  friend bool operator==(const DType& a, const DType& b) {
    return a.scalar == b.scalar && a.count == b.count && a.ptr == b.ptr && a.size == b.size &&
           a.addrspace == b.addrspace;
  }
  template <typename H>
  friend H AbslHashValue(H h, const DType& d) {
    return H::combine(std::move(h), d.scalar, d.count, d.ptr, d.size, d.addrspace);
  }
};

// "float32", "float32x4", "float32*[16]", "float32*[16]:LOCAL".
std::string DTypeToString(const DType& dtype);

}  // namespace uopd

#endif  // UOPD_CORE_IR_DTYPE_H_
