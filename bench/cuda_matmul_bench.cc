// Matmul speed on CUDA:0 against the GPU's own peak, measured in the same run by
// microbenchmarks (issue 25's targets): a float32 4096^3 matmul as the GPU heuristics choose
// against back-to-back fmaf, and a float16 4096^3 matmul through tensor cores (tinygrad's TC opt
// with use_tensor_cores 1: the heuristics' choice, as tinygrad's, and two other lists) against
// back-to-back mma.sync m16n8k16.
// Without a GPU it compiles the microbenchmarks with NVRTC for sm_80, says so and exits 0.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_renderer.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "bench/bench_util.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/optimize.h"
#include "core/util/status_macros.h"
#include "core/wire/decode.h"
#include "tests/testing/graph_builder.h"

namespace {

constexpr int kPeakBlocks = 4096, kPeakThreads = 256, kPeakIterations = 4096;

// Each thread: 8 independent chains of fmaf (2 flops each), written out so nothing is dropped.
constexpr char kFmaPeak[] = R"(
extern "C" __global__ void __launch_bounds__(256) uopd_fma_peak(float* __restrict__ data0,
                                                                int* __restrict__ uopd_status) {
  float x = threadIdx.x * 1e-9f, y = 1.0f - x, a[8];
  for (int i = 0; i < 8; ++i) a[i] = x + i;
  for (int it = 0; it < 4096; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) a[i] = fmaf(a[i], y, x);
  }
  float s = 0;
  for (int i = 0; i < 8; ++i) s += a[i];
  if (s == 12345.0f) data0[threadIdx.x] = s;
}
)";

// Each warp: 4 independent m16n8k16 f16 x f16 + f32 accumulations (4096 flops each).
constexpr char kMmaPeak[] = R"(
#include <cuda_fp16.h>
extern "C" __global__ void __launch_bounds__(256) uopd_mma_peak(float* __restrict__ data0,
                                                                int* __restrict__ uopd_status) {
  unsigned a[4], b[2];
  float c[4][4];
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ threadIdx.x;
  for (int i = 0; i < 2; ++i) b[i] = 0x3c003c00u ^ (threadIdx.x << 3);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) c[j][i] = 0;
  for (int it = 0; it < 4096; ++it) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                   "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                   : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  float s = 0;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) s += c[j][i];
  if (s == 12345.0f) data0[threadIdx.x] = s;
}
)";

uopd::ProgramSpec PeakSpec(const std::string& name, const char* src) {
  uopd::ProgramSpec spec;
  spec.name = name;
  spec.src = src;
  spec.device = "CUDA";
  spec.global_size[0].constant = kPeakBlocks;
  spec.local_size.emplace();
  (*spec.local_size)[0].constant = kPeakThreads;
  spec.globals = {uopd::BufferParam{0, uopd::DType::Of(uopd::Scalar::kFloat32), kPeakThreads}};
  spec.outs = {0};
  spec.buf_count = 1;
  return spec;
}

struct Case {
  std::string name;
  uopd::v1::DType::Scalar in;
  uopd::OptimizeRequest request;
  bool tensor_cores;
};

constexpr int64_t kN = 4096;

std::vector<Case> Cases() {
  using uopd::Opt;
  using uopd::OptOp;
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {-1, 0, 1};
  return {
      {"f32 matmul 4096^3, GPU heuristics",
       uopd::v1::DType::FLOAT32,
       {uopd::OptMode::kHeuristic, {}},
       false},
      {"f16 matmul 4096^3, TC", uopd::v1::DType::FLOAT16, {uopd::OptMode::kOpts, {tc}}, true},
      {"f16 matmul 4096^3, GPU heuristics (tinygrad's TC)",
       uopd::v1::DType::FLOAT16,
       {uopd::OptMode::kHeuristic, {}},
       true},
      {"f16 matmul 4096^3, TC UP(0,2) UP(1,2) L(0,2) L(1,2)",
       uopd::v1::DType::FLOAT16,
       {uopd::OptMode::kOpts,
        {tc, Opt{OptOp::kUpcast, 0, 2}, Opt{OptOp::kUpcast, 1, 2}, Opt{OptOp::kLocal, 0, 2},
         Opt{OptOp::kLocal, 1, 2}}},
       true},
  };
}

// The case's kernel for `arch`, optimized and spelled.
absl::StatusOr<uopd::ProgramSpec> CaseSpec(const Case& c, const std::string& arch) {
  UOPD_ASSIGN_OR_RETURN(auto ast, uopd::DecodeKernelAst(uopd::testing::Matmul(
                                      kN, kN, kN, c.in, uopd::v1::DType::FLOAT32)));
  UOPD_ASSIGN_OR_RETURN(auto chosen,
                        uopd::OptimizeKernel(ast, uopd::OptTarget::Cuda(arch), c.request));
  std::printf("%-52s opts %s\n", c.name.c_str(), uopd::OptsToString(chosen.applied).c_str());
  return uopd::CudaRenderer().Render(chosen.ast, "matmul");
}

}  // namespace

int main() {
  const uopd::ProgramSpec fma_spec = PeakSpec("uopd_fma_peak", kFmaPeak);
  const uopd::ProgramSpec mma_spec = PeakSpec("uopd_mma_peak", kMmaPeak);
  auto devices = uopd::CreateCudaDevices();
  if (!devices.ok()) {
    auto nvrtc = uopd::NvrtcCompiler::Create("sm_80");
    for (const auto* spec : {&fma_spec, &mma_spec}) {
      auto compiled = nvrtc.ok() ? (*nvrtc)->Compile(*spec) : nvrtc.status();
      std::printf("%s: %s for sm_80\n", spec->name.c_str(),
                  compiled.ok() ? "compiles" : compiled.status().ToString().c_str());
    }
    for (const Case& c : Cases()) {
      auto spec = CaseSpec(c, "sm_80");
      auto compiled =
          spec.ok() && nvrtc.ok()
              ? (*nvrtc)->Compile(*spec)
              : absl::StatusOr<uopd::CompiledKernel>(spec.ok() ? nvrtc.status() : spec.status());
      if (!compiled.ok()) {
        std::printf("  %s\n", compiled.status().ToString().c_str());
      } else if (compiled->resources.has_value()) {
        std::printf("  sm_80: %d registers, %lld bytes spilled\n", compiled->resources->registers,
                    static_cast<long long>(compiled->resources->spilled_bytes));
      }
    }
    std::printf("no GPU: %s\n", std::string(devices.status().message()).c_str());
    return 0;
  }
  uopd::Device& gpu = *devices->front();
  uopd::Allocator& alloc = gpu.allocator();
  auto load = [&](const uopd::ProgramSpec& spec) {
    auto compiled = gpu.compiler().Compile(spec);
    if (!compiled.ok()) {
      std::fprintf(stderr, "%s: %s\n", spec.name.c_str(), compiled.status().ToString().c_str());
      std::exit(1);
    }
    auto program = gpu.runtime().Load(*compiled, spec);
    if (!program.ok()) std::exit(1);
    return *program;
  };
  auto queue = gpu.runtime().NewLaunchQueue();
  if (!queue.ok() || *queue == nullptr) return 1;
  constexpr int kBatch = 3;
  auto run = [&](const uopd::ProgramSpec& spec, uopd::Program& program, std::vector<void*> bufs) {
    auto dims = spec.launch_dims({});
    for (int i = 0; i < kBatch; ++i) {
      std::vector<int> after;
      if (i > 0) after.push_back(i - 1);
      if (!(*queue)->Submit(i, program, bufs, {}, *dims, after).ok()) std::abort();
    }
    std::vector<uopd::KernelTime> times;
    int failed = -1;
    if (!(*queue)->Finish(&times, &failed).ok()) std::abort();
  };
  auto median_seconds = [&](const uopd::ProgramSpec& spec, uopd::Program& program,
                            std::vector<void*> bufs) {
    std::vector<double> samples;
    for (int rep = 0; rep < 12; ++rep) {
      double t = uopd::bench::SecondsOf([&] { run(spec, program, bufs); });
      if (rep >= 2) samples.push_back(t / kBatch);
    }
    return uopd::bench::Percentile(samples, 0.5);
  };
  void* scratch = *alloc.Allocate(kPeakThreads * 4);
  auto fma = load(fma_spec);
  auto mma = load(mma_spec);
  const double peak_threads = 1.0 * kPeakBlocks * kPeakThreads;
  const double fma_peak =
      2.0 * 8 * kPeakIterations * peak_threads / median_seconds(fma_spec, *fma, {scratch}) / 1e12;
  const double mma_peak = 4.0 * 4096 * kPeakIterations * (peak_threads / 32) /
                          median_seconds(mma_spec, *mma, {scratch}) / 1e12;

  std::printf("GPU: CUDA:0 (%s); peaks by microbenchmark: fmaf %.1f TFLOP/s, mma.sync f16 %.1f\n",
              gpu.compiler().Target().c_str(), fma_peak, mma_peak);
  std::printf("%-52s %10s %8s\n", "workload", "TFLOP/s", "of peak");
  for (const Case& c : Cases()) {
    auto spec = CaseSpec(c, gpu.compiler().Target());
    if (!spec.ok()) {
      std::printf("%-52s %s\n", c.name.c_str(), spec.status().ToString().c_str());
      continue;
    }
    auto program = load(*spec);
    const size_t in_bytes = kN * kN * (c.in == uopd::v1::DType::FLOAT32 ? 4 : 2);
    void* out = *alloc.Allocate(kN * kN * 4);
    void* a = *alloc.Allocate(in_bytes);
    void* b = *alloc.Allocate(in_bytes);
    const double tflops = 2.0 * kN * kN * kN / median_seconds(*spec, *program, {out, a, b}) / 1e12;
    const double peak = c.tensor_cores ? mma_peak : fma_peak;
    std::printf("%-52s %10.1f %7.0f%%\n", c.name.c_str(), tflops, 100 * tflops / peak);
    alloc.Free(out, kN * kN * 4);
    alloc.Free(a, in_bytes);
    alloc.Free(b, in_bytes);
  }
  return 0;
}
