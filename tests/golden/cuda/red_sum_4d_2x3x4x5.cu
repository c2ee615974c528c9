// IDIV/MOD with C semantics, defined where C is not: x/0 = 0, x%0 = 0, MIN/-1 wraps.
template <typename T> __device__ __forceinline__ T uopd_div(T a, T b) {
  if (b == T(0)) return T(0);
  if (T(-1) < T(0) && b == T(-1)) return T(0ULL - (unsigned long long)a);
  return a / b;
}
template <typename T> __device__ __forceinline__ T uopd_mod(T a, T b) {
  if (b == T(0) || (T(-1) < T(0) && b == T(-1))) return T(0);
  return a % b;
}
template <typename To, typename From> __device__ __forceinline__ To uopd_bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between sizes");
  To y;
  memcpy(&y, &x, sizeof(To));
  return y;
}
__device__ __forceinline__ unsigned uopd_rotl32(unsigned v, int r) { return (v << r) | (v >> (32 - r)); }
// Threefry-2x32-20 of a 64-bit counter (see the corpus README).
__device__ unsigned long long uopd_threefry(unsigned long long x, unsigned long long key) {
  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  unsigned x0 = (unsigned)x, x1 = (unsigned)(x >> 32);
  unsigned ks[3] = {(unsigned)key, (unsigned)(key >> 32), 0};
  ks[2] = ks[0] ^ ks[1] ^ 0x1BD11BDAu;
  x0 += ks[0];
  x1 += ks[1];
  for (int g = 0; g < 5; ++g) {
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = uopd_rotl32(x1, rot[g & 1][r]) ^ x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + (unsigned)(g + 1);
  }
  return ((unsigned long long)x1 << 32) | x0;
}
__device__ __forceinline__ void uopd_fail(int* status, int code) { atomicCAS(status, 0, code); }

// kernel red_sum_4d_2x3x4x5: 2 accesses proven in bounds, 0 checked at run time
extern "C" __global__ void __launch_bounds__(256) red_sum_4d_2x3x4x5(float* __restrict__ data0, float* __restrict__ data1, int* __restrict__ uopd_status) {
  int v2 = (((int)2LL) * ((int)4LL));
  int v3 = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;
  if (v3 >= v2) return;
  int v4 = uopd_mod<int>(v3, ((int)4LL));
  int v5 = uopd_div<int>(v3, ((int)4LL));
  float acc7 = 0x0p+0f;
  for (int v10 = ((int)0LL); v10 < ((int)3LL); ++v10) {
    for (int v13 = ((int)0LL); v13 < ((int)5LL); ++v13) {
      int v14 = (v4 * ((int)5LL));
      int v15 = (v14 + v13);
      int v17 = (v10 * ((int)20LL));
      int v18 = (v15 + v17);
      int v20 = (v5 * ((int)60LL));
      int v21 = (v18 + v20);
      float v22 = data1[v21];
      acc7 = (acc7 + v22);
    }
  }
  float v26 = acc7;
  int v27 = (v5 * ((int)4LL));
  int v28 = (v27 + v4);
  data0[v28] = v26;
}
