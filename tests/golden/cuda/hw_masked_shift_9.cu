// kernel hw_masked_shift_9: 2 accesses proven in bounds, 0 checked at run time
extern "C" __global__ void __launch_bounds__(256) hw_masked_shift_9(float* __restrict__ data0, float* __restrict__ data1, int* __restrict__ uopd_status) {
  int v1 = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;
  if (v1 >= ((int)9LL)) return;
  bool v3 = (v1 < ((int)2LL));
  bool v5 = (v3 != true);
  int v7 = (v1 + ((int)-2LL));
  float v8 = (v5 ? data1[v7] : ((float)0));
  float v10 = (v5 ? v8 : -0x1p+0f);
  data0[v1] = v10;
}
