// kernel red_sum_4d_2x3x4x5: 2 accesses proven in bounds, 0 checked at run time
extern "C" __global__ void __launch_bounds__(256) red_sum_4d_2x3x4x5(float* __restrict__ data0, float* __restrict__ data1, int* __restrict__ uopd_status) {
  int v2 = (((int)2LL) * ((int)4LL));
  int v3 = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;
  if (v3 >= v2) return;
  int v4 = (int)(v3 % ((int)4LL));
  int v5 = (int)(v3 / ((int)4LL));
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
