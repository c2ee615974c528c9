#include "kernel_support.h"

/* The CUDA backend compiles this same file into every kernel's CUDA C (embedded at build time,
 * with the include above removed), so both backends convert and hash bit for bit alike. There
 * every function is a device function. */
#ifndef UOPD_KERNEL_FN
#define UOPD_KERNEL_FN
#endif

/* Bit casts without memcpy from libc. */
static UOPD_KERNEL_FN uint64_t double_bits(double x) {
  union {
    double d;
    uint64_t u;
  } v;
  v.d = x;
  return v.u;
}
static UOPD_KERNEL_FN float float_from_bits(uint32_t u) {
  union {
    float f;
    uint32_t u;
  } v;
  v.u = u;
  return v.f;
}

/* Rounds a double to a binary format with `ebits` exponent and `mbits` mantissa bits, its
 * exponent biased by `bias`. `max_field` is the largest finite encoding of the magnitude
 * (exponent and mantissa fields), `inf_field` what overflow becomes (an infinity, or max_field to
 * saturate), `nan_field` the encoding of NaN's magnitude. */
static UOPD_KERNEL_FN uint32_t round_to_small(double x, int ebits, int mbits, int bias,
                                              uint32_t max_field, uint32_t inf_field,
                                              uint32_t nan_field) {
  uint64_t bits = double_bits(x);
  uint32_t sign = (uint32_t)(bits >> 63) << (ebits + mbits);
  uint64_t exp = (bits >> 52) & 0x7ff;
  uint64_t man = bits & ((1ull << 52) - 1);
  if (exp == 0x7ff) return sign | (man != 0 ? nan_field : inf_field);
  if (exp == 0) return sign;          /* zero or a double subnormal: far below every small format */
  int e = (int)exp - 1023 + bias;     /* the target's biased exponent, if normal */
  uint64_t full = (1ull << 52) | man; /* 53 significant bits */
  int shift = 52 - mbits;
  if (e < 1) shift += 1 - e;   /* subnormal in the target: drop more bits */
  if (shift > 60) return sign; /* rounds to zero */
  uint64_t q = full >> shift;
  uint64_t rem = full & ((1ull << shift) - 1);
  uint64_t half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q += 1;
  /* For normals, q includes the implicit bit: fold it into the exponent field. A carry out of
   * the mantissa moves into the exponent on its own; so does a subnormal rounding up to the
   * smallest normal. */
  uint64_t field = e < 1 ? q : ((uint64_t)(e - 1) << mbits) + q;
  if (field > max_field) return sign | inf_field;
  return sign | (uint32_t)field;
}

UOPD_KERNEL_FN uint32_t uopd_f64_to_f16(double x) {
  return round_to_small(x, 5, 10, 15, 0x7bff, 0x7c00, 0x7e00);
}
UOPD_KERNEL_FN uint32_t uopd_f64_to_bf16(double x) {
  return round_to_small(x, 8, 7, 127, 0x7f7f, 0x7f80, 0x7fc0);
}
UOPD_KERNEL_FN uint32_t uopd_f64_to_fp8e4m3(double x) {
  return round_to_small(x, 4, 3, 7, 0x7e, 0x7e, 0x7f);
}
UOPD_KERNEL_FN uint32_t uopd_f64_to_fp8e5m2(double x) {
  return round_to_small(x, 5, 2, 15, 0x7b, 0x7b, 0x7e);
}

/* The fnuz formats: one more bias than OCP's, every exponent finite, no negative zero (0x80 is
 * their one NaN). Overflow and infinities saturate, as tinygrad's clamp before the conversion. */
static UOPD_KERNEL_FN uint32_t round_to_fnuz(double x, int ebits, int mbits) {
  if (x != x) return 0x80;
  uint32_t bits = round_to_small(x, ebits, mbits, 1 << (ebits - 1), 0x7f, 0x7f, 0);
  return (bits & 0x7f) == 0 ? 0 : bits;
}
UOPD_KERNEL_FN uint32_t uopd_f64_to_fp8e4m3fnuz(double x) { return round_to_fnuz(x, 4, 3); }
UOPD_KERNEL_FN uint32_t uopd_f64_to_fp8e5m2fnuz(double x) { return round_to_fnuz(x, 5, 2); }

/* What a small format's all-ones exponent means. */
enum small_specials {
  kSmallIeee, /* infinities and NaNs (float16, fp8 e5m2) */
  kSmallFn,   /* only NaN, at the largest mantissa (fp8 e4m3) */
  kSmallFnuz  /* nothing: the sign bit alone is NaN (the fnuz fp8 formats) */
};

/* Widens a small format, its exponent biased by `bias`, to float bits. */
static UOPD_KERNEL_FN float widen_small(uint32_t bits, int ebits, int mbits, int bias,
                                        enum small_specials specials) {
  uint32_t sign = ((bits >> (ebits + mbits)) & 1) << 31;
  uint32_t exp = (bits >> mbits) & ((1u << ebits) - 1);
  uint32_t man = bits & ((1u << mbits) - 1);
  int all_ones = exp == (1u << ebits) - 1;
  if (specials == kSmallIeee && all_ones) {
    return float_from_bits(sign | 0x7f800000u | (man << (23 - mbits)) | (man ? 0x400000u : 0));
  }
  if (specials == kSmallFn && all_ones && man == (1u << mbits) - 1) {
    return float_from_bits(sign | 0x7fc00000u);
  }
  if (specials == kSmallFnuz && bits == 1u << (ebits + mbits)) return float_from_bits(0x7fc00000u);
  if (exp == 0) {
    if (man == 0) return float_from_bits(sign);
    /* Subnormal: normalize the mantissa. */
    int e = 1 - bias;
    while ((man & (1u << mbits)) == 0) {
      man <<= 1;
      e -= 1;
    }
    man &= (1u << mbits) - 1;
    return float_from_bits(sign | ((uint32_t)(e + 127) << 23) | (man << (23 - mbits)));
  }
  return float_from_bits(sign | ((exp - bias + 127) << 23) | (man << (23 - mbits)));
}

UOPD_KERNEL_FN float uopd_f16_to_f32(uint32_t bits) {
  return widen_small(bits & 0xffff, 5, 10, 15, kSmallIeee);
}
UOPD_KERNEL_FN float uopd_bf16_to_f32(uint32_t bits) {
  return float_from_bits((bits & 0xffff) << 16);
}
UOPD_KERNEL_FN float uopd_fp8e4m3_to_f32(uint32_t bits) {
  return widen_small(bits & 0xff, 4, 3, 7, kSmallFn);
}
UOPD_KERNEL_FN float uopd_fp8e5m2_to_f32(uint32_t bits) {
  return widen_small(bits & 0xff, 5, 2, 15, kSmallIeee);
}
UOPD_KERNEL_FN float uopd_fp8e4m3fnuz_to_f32(uint32_t bits) {
  return widen_small(bits & 0xff, 4, 3, 8, kSmallFnuz);
}
UOPD_KERNEL_FN float uopd_fp8e5m2fnuz_to_f32(uint32_t bits) {
  return widen_small(bits & 0xff, 5, 2, 16, kSmallFnuz);
}

static UOPD_KERNEL_FN uint32_t rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

UOPD_KERNEL_FN uint64_t uopd_threefry(uint64_t x, uint64_t key) {
  /* The rotations {13, 15, 26, 6} then {17, 29, 16, 24}, 5 bits each: a table would be a static
   * array, which device code cannot hold as cheaply. */
  const uint64_t kRotations = 0xc43b1369edull;
  uint32_t x0 = (uint32_t)x, x1 = (uint32_t)(x >> 32);
  uint32_t ks[3];
  ks[0] = (uint32_t)key;
  ks[1] = (uint32_t)(key >> 32);
  ks[2] = ks[0] ^ ks[1] ^ 0x1BD11BDAu;
  x0 += ks[0];
  x1 += ks[1];
  for (int g = 0; g < 5; ++g) {
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = rotl32(x1, (int)((kRotations >> (5 * ((g & 1) * 4 + r))) & 31)) ^ x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + (uint32_t)(g + 1);
  }
  return ((uint64_t)x1 << 32) | x0;
}
