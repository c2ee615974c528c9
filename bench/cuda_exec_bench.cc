// GPU execution bandwidth against a device-to-device copy of the same bytes, in one run, on
// CUDA:0: float32 elementwise add (64M elements; as written, and with the GPU heuristics'
// float4 upcast), row sums of an 8192 x 8192 matrix (a warp per row; as written, and with the
// heuristics' float4 lanes), its column sums (a thread per column as written, and as the GPU
// heuristics split it: 32 columns by 8 row shares per block, core/opt/column_split.h), and
// softmax and layer norm of its rows as tinygrad schedules them (two row reductions, then an
// elementwise pass; each kernel with the GPU heuristics). GB/s counts bytes read plus written;
// the copy moves the same total. Each sample is 10 back-to-back runs with one wait at the end
// (kernels through a launch queue, as plans run; copies through the driver), so launch and wait
// costs are amortized as in a real plan.
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_driver.h"
#include "bench/bench_util.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/optimize.h"
#include "core/wire/decode.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/sample_kernels.h"

namespace {

using uopd::testing::AddKernel;
using uopd::testing::RowSumKernel;

constexpr int kBatch = 10;  // runs per sample, one wait at the end

struct Loaded {
  uopd::ProgramSpec spec;
  std::shared_ptr<uopd::Program> program;
};

// CUDA:0's programs, buffers and launch queue; exits the process on a setup failure.
class Gpu {
 public:
  Gpu(uopd::Device& gpu, std::unique_ptr<uopd::LaunchQueue> queue)
      : gpu_(gpu), driver_(**uopd::CudaDriver::Load()), queue_(std::move(queue)) {}

  uopd::Allocator& alloc() { return gpu_.allocator(); }

  void* Buffer(size_t bytes, float fill) {
    void* p = *alloc().Allocate(bytes);
    std::vector<float> host(bytes / 4, fill);
    (void)alloc().CopyIn(p, host.data(), bytes);
    return p;
  }

  // `wire` compiled as written, or with the GPU heuristics' opts (printed).
  Loaded Prepare(const uopd::v1::Graph& wire, bool heuristics = false) {
    std::shared_ptr<const uopd::KernelAst> ast = *uopd::DecodeKernelAst(wire);
    if (heuristics) {
      auto chosen = uopd::OptimizeKernel(ast, uopd::OptTarget::Cuda(gpu_.compiler().Target()),
                                         uopd::OptimizeRequest{uopd::OptMode::kHeuristic, {}});
      if (!chosen.ok()) {
        std::fprintf(stderr, "%s\n", chosen.status().ToString().c_str());
        std::exit(1);
      }
      std::printf("heuristics: %s\n", uopd::OptsToString(chosen->applied).c_str());
      ast = chosen->ast;
    }
    auto spec = gpu_.renderer().Render(ast, ast->DefaultName());
    auto compiled = gpu_.compiler().Compile(*spec);
    auto program = gpu_.runtime().Load(*compiled, *spec);
    if (!program.ok()) {
      std::fprintf(stderr, "%s\n", program.status().ToString().c_str());
      std::exit(1);
    }
    return Loaded{*spec, *program};
  }

  std::vector<Loaded> PrepareAll(const std::vector<uopd::v1::Graph>& kernels) {
    std::vector<Loaded> loaded;
    for (const uopd::v1::Graph& k : kernels) loaded.push_back(Prepare(k, /*heuristics=*/true));
    return loaded;
  }

  // A batch of `k` on `bufs`, each run after the one before.
  void Run(const Loaded& k, const std::vector<void*>& bufs) { RunEach({k}, {bufs}); }

  // A batch of the kernels of `k` in turn (kernel j on bufs[j]), each after the one before.
  void RunEach(const std::vector<Loaded>& k, const std::vector<std::vector<void*>>& bufs) {
    int index = 0;
    for (int i = 0; i < kBatch; ++i) {
      for (size_t j = 0; j < k.size(); ++j, ++index) {
        std::vector<int> after;
        if (index > 0) after.push_back(index - 1);
        if (!queue_->Submit(index, *k[j].program, bufs[j], {}, *k[j].spec.launch_dims({}), after)
                 .ok()) {
          std::abort();
        }
      }
    }
    std::vector<uopd::KernelTime> times;
    int failed = -1;
    if (!queue_->Finish(&times, &failed).ok()) std::abort();
  }

  // A batch of device-to-device copies of `bytes`.
  void Copy(void* dst, void* src, size_t bytes) {
    for (int i = 0; i < kBatch; ++i) {
      driver_.MemcpyDtoD(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                         bytes);
    }
    driver_.CtxSynchronize();
  }

  float Read(void* buffer, size_t byte_offset) {
    float value = 0;
    (void)alloc().CopyOut(&value, static_cast<char*>(buffer) + byte_offset, 4);
    return value;
  }

 private:
  uopd::Device& gpu_;
  const uopd::CudaDriver& driver_;
  std::unique_ptr<uopd::LaunchQueue> queue_;
};

// One timed batch and its samples (seconds).
struct Timed {
  std::function<void()> run;
  std::vector<double> seconds;
  double Median() const { return uopd::bench::Percentile(seconds, 0.5); }
};

// `bytes` (read plus written) per run of `kernel` against `copy_bytes` per copy of `copy`.
void Report(const char* name, double bytes, const Timed& kernel, const Timed& copy,
            double copy_bytes) {
  const double kg = kBatch * bytes / kernel.Median() / 1e9,
               cg = kBatch * copy_bytes / copy.Median() / 1e9;
  std::printf("%-36s %10.0f %14.0f %8.2fx\n", name, kg, cg, kg / cg);
}

}  // namespace

int main() {
  auto devices = uopd::CreateCudaDevices();
  if (!devices.ok()) {
    std::printf("no GPU: %s\n", std::string(devices.status().message()).c_str());
    return 0;
  }
  uopd::Device& device = *devices->front();
  auto queue = device.runtime().NewLaunchQueue();
  if (!queue.ok() || *queue == nullptr) return 1;
  Gpu gpu(device, *std::move(queue));
  const int64_t n = 64 << 20, rows = 8192, cols = 8192;
  const double matrix_bytes = 1.0 * rows * cols * 4;
  void *out = gpu.Buffer(n * 4, 0), *a = gpu.Buffer(n * 4, 1), *b = gpu.Buffer(n * 4, 2);
  void *matrix = gpu.Buffer(rows * cols * 4, 1), *sums = gpu.Buffer(rows * 4, 0),
       *col_sums = gpu.Buffer(cols * 4, 0);
  void *copy_src = gpu.Buffer(n * 6, 1), *copy_dst = gpu.Buffer(n * 6, 0);
  void* split_sums = gpu.Buffer(cols * 4, 0);
  void* wide_sums = gpu.Buffer(rows * 4, 0);
  void *row_first = gpu.Buffer(rows * 4, 0), *row_second = gpu.Buffer(rows * 4, 0),
       *rows_out = gpu.Buffer(rows * cols * 4, 0);

  const Loaded add = gpu.Prepare(AddKernel(n));
  const Loaded add_upcast = gpu.Prepare(AddKernel(n), /*heuristics=*/true);
  const std::vector<Loaded> softmax = gpu.PrepareAll(uopd::testing::SoftmaxKernels(rows, cols));
  const std::vector<Loaded> layernorm = gpu.PrepareAll(uopd::testing::LayerNormKernels(rows, cols));
  const Loaded rowsum = gpu.Prepare(RowSumKernel(rows, cols));
  const Loaded rowsum_wide = gpu.Prepare(RowSumKernel(rows, cols), /*heuristics=*/true);
  const Loaded colsum = gpu.Prepare(uopd::testing::ColumnSumKernel(rows, cols));
  const Loaded colsum_split =
      gpu.Prepare(uopd::testing::ColumnSumKernel(rows, cols), /*heuristics=*/true);
  // Softmax and layer norm: reduction, reduction, elementwise, each after the one before.
  const std::vector<std::vector<void*>> row_bufs = {{row_first, matrix},
                                                    {row_second, matrix, row_first},
                                                    {rows_out, matrix, row_first, row_second}};

  Timed add4_t{[&] {
    gpu.Run(add_upcast, {out, a, b});
  }},
      sum_wide_t{[&] {
        gpu.Run(rowsum_wide, {wide_sums, matrix});
      }},
      softmax_t{[&] { gpu.RunEach(softmax, row_bufs); }},
      layernorm_t{[&] { gpu.RunEach(layernorm, row_bufs); }}, add_t{[&] {
        gpu.Run(add, {out, a, b});
      }},
      add_copy_t{[&] { gpu.Copy(copy_dst, copy_src, n * 6); }}, sum_t{[&] {
        gpu.Run(rowsum, {sums, matrix});
      }},
      sum_copy_t{[&] { gpu.Copy(copy_dst, copy_src, rows * cols * 2); }}, col_t{[&] {
        gpu.Run(colsum, {col_sums, matrix});
      }},
      split_t{[&] {
        gpu.Run(colsum_split, {split_sums, matrix});
      }};
  // Interleaved, so a moment of load slows one sample of each rather than one workload; the
  // layer norm runs after the softmax, so its outputs are the last in rows_out.
  std::vector<Timed*> order = {&add4_t,     &sum_wide_t, &softmax_t,  &layernorm_t, &add_t,
                               &add_copy_t, &sum_t,      &sum_copy_t, &col_t,       &split_t};
  for (int rep = 0; rep < 30; ++rep) {
    for (Timed* t : order) {
      const double seconds = uopd::bench::SecondsOf(t->run);
      if (rep >= 3) t->seconds.push_back(seconds);  // after a warm-up
    }
  }

  if (const float wide = gpu.Read(wide_sums, 28); wide != static_cast<float>(cols)) {
    std::fprintf(stderr, "wrong float4 row sum: %f\n", wide);
    return 1;
  }
  // The layer norm ran last, on a matrix of ones: means 1, outputs 0.
  const float mean = gpu.Read(row_first, 12), normed = gpu.Read(rows_out, 20);
  if (std::abs(mean - 1.0f) > 1e-4f || normed != 0.0f) {
    std::fprintf(stderr, "wrong layer norm: mean %f, output %f\n", mean, normed);
    return 1;
  }
  const float check[4] = {gpu.Read(out, 400), gpu.Read(sums, 28), gpu.Read(col_sums, 28),
                          gpu.Read(split_sums, 28)};
  if (check[0] != 3.0f || check[1] != static_cast<float>(cols) ||
      check[2] != static_cast<float>(rows) || check[3] != static_cast<float>(rows)) {
    std::fprintf(stderr, "wrong results: %f %f %f %f\n", check[0], check[1], check[2], check[3]);
    return 1;
  }
  std::printf("GPU: CUDA:0 (%s); median of 27 samples of 10 runs each\n",
              device.compiler().Target().c_str());
  std::printf("%-36s %10s %14s %9s\n", "workload", "GB/s", "DtoD copy GB/s", "ratio");
  Report("elementwise add, 64M float32", 3.0 * n * 4, add_t, add_copy_t, 3.0 * n * 4);
  Report("elementwise add, heuristics (float4)", 3.0 * n * 4, add4_t, add_copy_t, 3.0 * n * 4);
  Report("row sum 8192x8192 float32", matrix_bytes, sum_t, sum_copy_t, matrix_bytes);
  Report("row sum, heuristics (float4 lanes)", matrix_bytes, sum_wide_t, sum_copy_t, matrix_bytes);
  Report("column sum 8192x8192 float32", matrix_bytes, col_t, sum_copy_t, matrix_bytes);
  Report("column sum, heuristics' split", matrix_bytes, split_t, sum_copy_t, matrix_bytes);
  // Three reads of the matrix and one write, against the copy of the row sums' bytes.
  Report("softmax of 8192 rows of 8192", 4 * matrix_bytes, softmax_t, sum_copy_t, matrix_bytes);
  Report("layer norm of 8192 rows of 8192", 4 * matrix_bytes, layernorm_t, sum_copy_t,
         matrix_bytes);
  return 0;
}
