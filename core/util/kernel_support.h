/* Scalar helpers kernels call and the host shares: conversions for the float types x86 has no
 * arithmetic for (float16, bfloat16, fp8), computed exactly (round to nearest even), and THREEFRY.
 * Plain C so the same file is compiled into the daemon (for constants) and into LLVM bitcode that
 * the CPU compiler links into each kernel and inlines. No libc calls: kernels stay self-contained.
 */
#ifndef UOPD_CORE_UTIL_KERNEL_SUPPORT_H_
#define UOPD_CORE_UTIL_KERNEL_SUPPORT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Rounds `x` to the format (round to nearest even); returns its bits in the low bits. */
uint32_t uopd_f64_to_f16(double x);
uint32_t uopd_f64_to_bf16(double x);
/* fp8 e4m3 (OCP "fn": no infinities, 0x7f is NaN) saturates to +-448, as tinygrad does. */
uint32_t uopd_f64_to_fp8e4m3(double x);
/* fp8 e5m2 saturates to +-57344 too (infinities included), as tinygrad 0.14's float to fp8 and
 * CUDA's satfinite conversion do; 0x7c (infinity) still loads as infinity. */
uint32_t uopd_f64_to_fp8e5m2(double x);
/* The fnuz fp8 formats (bias 8 and 16, no infinities, no negative zero, 0x80 is NaN) saturate
 * to +-240 and +-57344, infinities included, as tinygrad's conversion clamps first. */
uint32_t uopd_f64_to_fp8e4m3fnuz(double x);
uint32_t uopd_f64_to_fp8e5m2fnuz(double x);

/* Exact widening of the format's bits (low bits of `bits`) to float. */
float uopd_f16_to_f32(uint32_t bits);
float uopd_bf16_to_f32(uint32_t bits);
float uopd_fp8e4m3_to_f32(uint32_t bits);
float uopd_fp8e5m2_to_f32(uint32_t bits);
float uopd_fp8e4m3fnuz_to_f32(uint32_t bits);
float uopd_fp8e5m2fnuz_to_f32(uint32_t bits);

/* Threefry-2x32-20 of the 64-bit counter `x` under `key` (corpus README, "THREEFRY semantics"). */
uint64_t uopd_threefry(uint64_t x, uint64_t key);

#ifdef __cplusplus
}
#endif

#endif /* UOPD_CORE_UTIL_KERNEL_SUPPORT_H_ */
