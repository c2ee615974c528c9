// kernel sym_softmax_n8__k1: 3 accesses proven in bounds, 0 checked at run time
extern "C" __global__ void __launch_bounds__(256) sym_softmax_n8__k1(float* __restrict__ data0, float* __restrict__ data1, float* __restrict__ data2, long long var0, int* __restrict__ uopd_status) {
  long long uopd_thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int uopd_lane = (int)(uopd_thread & 31);
  int v1 = (int)(uopd_thread / 32);
  if (v1 >= ((int)4LL)) return;
  float acc3 = 0x0p+0f;
  for (int v6 = ((int)0LL) + uopd_lane; v6 < ((int)var0); v6 += 32) {
    int v8 = (v1 * ((int)16LL));
    int v9 = (v8 + v6);
    float v10 = data1[v9];
    float v11 = data2[v1];
    float v13 = (v11 * -0x1p+0f);
    float v14 = (v10 + v13);
    float v16 = (v14 * 0x1.715476p+0f);
    float v17 = exp2f(v16);
    acc3 = (acc3 + v17);
  }
  for (int uopd_o = 16; uopd_o > 0; uopd_o >>= 1) {
    float uopd_other = uopd_shfl_xor(acc3, uopd_o);
    acc3 = (acc3 + uopd_other);
  }
  float v20 = acc3;
  if (uopd_lane == 0) data0[v1] = v20;
}
