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

// kernel sym_two_vars_i4_j1: 2 accesses proven in bounds, 1 checked at run time
extern "C" __global__ void __launch_bounds__(256) sym_two_vars_i4_j1(float* __restrict__ data0, float* __restrict__ data1, float* __restrict__ data2, long long var0, long long var1, int* __restrict__ uopd_status) {
  int v2 = (((int)var0) + ((int)var1));
  int v4 = (v2 * ((int)3LL));
  int v5 = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;
  if (v5 >= v4) return;
  int v6 = uopd_mod<int>(v5, ((int)3LL));
  int v7 = uopd_div<int>(v5, ((int)3LL));
  int v8 = (v7 * ((int)3LL));
  int v9 = (v8 + v6);
  bool v10 = (v7 < ((int)var0));
  float v11 = (v10 ? data1[v9] : float(0));
  float v13 = (v10 ? v11 : 0x0p+0f);
  bool v15 = (v10 != true);
  bool v16 = (v7 < v2);
  bool v17 = (bool)(v15 & v16);
  int v19 = (((int)var0) * ((int)-1LL));
  int v20 = (v19 + v7);
  int v21 = (v20 * ((int)3LL));
  int v22 = (v21 + v6);
  int v24 = uopd_mod<int>(v22, ((int)30LL));
  if (v17 && (unsigned long long)v24 >= 30ULL) { uopd_fail(uopd_status, 3); return; }
  float v26 = (v17 ? data2[v24] : float(0));
  float v27 = (v17 ? v26 : 0x0p+0f);
  float v28 = (v13 + v27);
  float v30 = (v28 * 0x1p+1f);
  data0[v9] = v30;
}
