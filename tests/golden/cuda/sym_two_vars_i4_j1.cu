// kernel sym_two_vars_i4_j1: 2 accesses proven in bounds, 1 checked at run time
extern "C" __global__ void __launch_bounds__(256) sym_two_vars_i4_j1(float* __restrict__ data0, float* __restrict__ data1, float* __restrict__ data2, long long var0, long long var1, int* __restrict__ uopd_status) {
  int v2 = (((int)var0) + ((int)var1));
  int v4 = (v2 * ((int)3LL));
  int v5 = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;
  if (v5 >= v4) return;
  int v6 = (int)(v5 % ((int)3LL));
  int v7 = (int)(v5 / ((int)3LL));
  int v8 = (v7 * ((int)3LL));
  int v9 = (v8 + v6);
  bool v10 = (v7 < ((int)var0));
  float v11 = (v10 ? data1[v9] : ((float)0));
  float v13 = (v10 ? v11 : 0x0p+0f);
  bool v15 = (v10 != true);
  bool v16 = (v7 < v2);
  bool v17 = (bool)(v15 & v16);
  int v19 = (((int)var0) * ((int)-1LL));
  int v20 = (v19 + v7);
  int v21 = (v20 * ((int)3LL));
  int v22 = (v21 + v6);
  int v24 = (int)(v22 % ((int)30LL));
  if (v17 && (unsigned long long)v24 >= 30ULL) { uopd_fail(uopd_status, 3); return; }
  float v26 = (v17 ? data2[v24] : ((float)0));
  float v27 = (v17 ? v26 : 0x0p+0f);
  float v28 = (v13 + v27);
  float v30 = (v28 * 0x1p+1f);
  data0[v9] = v30;
}
