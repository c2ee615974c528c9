// kernel cast_f32_to_f16_overflow_6: 2 accesses proven in bounds, 0 checked at run time
extern "C" __global__ void __launch_bounds__(256) cast_f32_to_f16_overflow_6(half* __restrict__ data0, float* __restrict__ data1, int* __restrict__ uopd_status) {
  int v1 = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;
  if (v1 >= ((int)6LL)) return;
  float v2 = data1[v1];
  half v3 = __float2half(v2);
  data0[v1] = v3;
}
