// kernel hw_threefry_u64_12: 3 accesses proven in bounds, 0 checked at run time
extern "C" __global__ void __launch_bounds__(256) hw_threefry_u64_12(unsigned long long* __restrict__ data0, unsigned long long* __restrict__ data1, unsigned long long* __restrict__ data2, int* __restrict__ uopd_status) {
  int v1 = (int)blockIdx.x * (int)blockDim.x + (int)threadIdx.x;
  if (v1 >= ((int)12LL)) return;
  unsigned long long v2 = data1[v1];
  unsigned long long v3 = data2[v1];
  unsigned long long v4 = uopd_support::uopd_threefry(v2, v3);
  data0[v1] = v4;
}
