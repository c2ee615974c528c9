// The device code every CUDA kernel uopd writes starts with (backends/cuda/cuda_renderer.cc):
// helpers NVRTC compiles away when unused, the CPU backend's support library as device code,
// and the fp8 constructors for kernels that use fp8.
#ifndef UOPD_BACKENDS_CUDA_CUDA_PRELUDE_H_
#define UOPD_BACKENDS_CUDA_CUDA_PRELUDE_H_

namespace uopd::cuda_prelude {

// Helpers every kernel may use; NVRTC compiles them away when unused.
inline constexpr char kPrelude[] =
    R"(template <typename To, typename From> __device__ __forceinline__ To uopd_bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between sizes");
  To y;
  memcpy(&y, &x, sizeof(To));
  return y;
}
// Float to integer as the CPU backend converts: toward zero, saturating at the type's limits,
// NaN to 0. C leaves these cases undefined, and the GPU's own conversions differ by width.
template <typename To, typename From> __device__ __forceinline__ To uopd_f2s(From x) {
  const From limit = (From)(1ULL << (sizeof(To) * 8 - 1));  // 2^(bits-1), exact
  if (x != x) return To(0);
  if (x >= limit) return (To)((1ULL << (sizeof(To) * 8 - 1)) - 1);
  if (x <= -limit) return (To)(-limit);
  return (To)x;
}
template <typename From> __device__ __forceinline__ unsigned long long uopd_f2u64(From x) {
  if (!(x > From(-1))) return 0ULL;  // NaN, and everything that truncates below zero
  if (x >= (From)18446744073709551616.0) return ~0ULL;
  return (unsigned long long)x;
}
__device__ __forceinline__ void uopd_fail(int* status, int code) { atomicCAS(status, 0, code); }
// Integer MAX as a 64-bit maximum in inline PTX. ptxas (CUDA 12.8 to at least 13.3) can fuse
// two 32-bit maxima into one three-input VIMNMX3 and drop a negated operand on the way
// (pytorch/pytorch#190973; seen here on an H200: max(-a, -b, -c) became max(-a, b, -c)), and
// tinygrad writes MIN as -MAX(-x, -y). A 64-bit maximum is not fused; it costs a few
// instructions more.
__device__ __forceinline__ long long uopd_smax64(long long a, long long b) {
  long long r;
  asm("max.s64 %0, %1, %2;" : "=l"(r) : "l"(a), "l"(b));
  return r;
}
__device__ __forceinline__ unsigned long long uopd_umax64(unsigned long long a,
                                                          unsigned long long b) {
  unsigned long long r;
  asm("max.u64 %0, %1, %2;" : "=l"(r) : "l"(a), "l"(b));
  return r;
}
template <typename T> __device__ __forceinline__ T uopd_imax(T a, T b) {
  if constexpr (T(-1) < T(0)) {
    return (T)uopd_smax64((long long)a, (long long)b);
  } else {
    return (T)uopd_umax64((unsigned long long)a, (unsigned long long)b);
  }
}
// A value from the lane `mask` away in the warp, for any type of up to 8 bytes.
template <typename T> __device__ __forceinline__ T uopd_shfl_xor(T v, int mask) {
  static_assert(sizeof(T) <= 8, "shuffle of a wide type");
  if constexpr (sizeof(T) <= 4) {
    unsigned u = 0;
    memcpy(&u, &v, sizeof(T));
    u = __shfl_xor_sync(0xffffffffu, u, mask);
    memcpy(&v, &u, sizeof(T));
  } else {
    unsigned long long u = 0;
    memcpy(&u, &v, sizeof(T));
    u = __shfl_xor_sync(0xffffffffu, u, mask);
    memcpy(&v, &u, sizeof(T));
  }
  return v;
}
)";

// core/util/kernel_support.c as device code: the CPU backend's own conversions and THREEFRY, so
// both backends round to the small float types and hash bit for bit alike.
#include "kernel_support_source.inc"

inline constexpr char kSupportOpen[] = R"(namespace uopd_support {
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define UOPD_KERNEL_FN __device__
)";
inline constexpr char kSupportClose[] = "}  // namespace uopd_support\n";

// fp8 values from their bits: the support library rounds (uopd_f64_to_fp8*), so every backend
// rounds alike.
inline constexpr char kFp8Prelude[] =
    R"(__device__ __forceinline__ __nv_fp8_e4m3 uopd_fp8e4m3(unsigned bits) {
  __nv_fp8_e4m3 r;
  r.__x = (__nv_fp8_storage_t)bits;
  return r;
}
__device__ __forceinline__ __nv_fp8_e5m2 uopd_fp8e5m2(unsigned bits) {
  __nv_fp8_e5m2 r;
  r.__x = (__nv_fp8_storage_t)bits;
  return r;
}
)";

}  // namespace uopd::cuda_prelude

#endif  // UOPD_BACKENDS_CUDA_CUDA_PRELUDE_H_
