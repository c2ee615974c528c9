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

}  // namespace

int main() {
  auto devices = uopd::CreateCudaDevices();
  if (!devices.ok()) {
    std::printf("no GPU: %s\n", std::string(devices.status().message()).c_str());
    return 0;
  }
  uopd::Device& gpu = *devices->front();
  const uopd::CudaDriver& driver = **uopd::CudaDriver::Load();
  uopd::Allocator& alloc = gpu.allocator();
  const int64_t n = 64 << 20, rows = 8192, cols = 8192;
  auto buffer = [&](size_t bytes, float fill) {
    void* p = *alloc.Allocate(bytes);
    std::vector<float> host(bytes / 4, fill);
    (void)alloc.CopyIn(p, host.data(), bytes);
    return p;
  };
  void *out = buffer(n * 4, 0), *a = buffer(n * 4, 1), *b = buffer(n * 4, 2);
  void *matrix = buffer(rows * cols * 4, 1), *sums = buffer(rows * 4, 0),
       *col_sums = buffer(cols * 4, 0);
  void *copy_src = buffer(n * 6, 1), *copy_dst = buffer(n * 6, 0);

  struct Loaded {
    uopd::ProgramSpec spec;
    std::shared_ptr<uopd::Program> program;
  };
  auto prepare = [&](const uopd::v1::Graph& wire, bool heuristics = false) {
    std::shared_ptr<const uopd::KernelAst> ast = *uopd::DecodeKernelAst(wire);
    if (heuristics) {
      auto chosen = uopd::OptimizeKernel(ast, uopd::OptTarget::Cuda(gpu.compiler().Target()),
                                         uopd::OptimizeRequest{uopd::OptMode::kHeuristic, {}});
      if (!chosen.ok()) {
        std::fprintf(stderr, "%s\n", chosen.status().ToString().c_str());
        std::exit(1);
      }
      std::printf("heuristics: %s\n", uopd::OptsToString(chosen->applied).c_str());
      ast = chosen->ast;
    }
    auto spec = gpu.renderer().Render(ast, ast->DefaultName());
    auto compiled = gpu.compiler().Compile(*spec);
    auto program = gpu.runtime().Load(*compiled, *spec);
    if (!program.ok()) {
      std::fprintf(stderr, "%s\n", program.status().ToString().c_str());
      std::exit(1);
    }
    return Loaded{*spec, *program};
  };
  Loaded add = prepare(AddKernel(n));
  Loaded add_upcast = prepare(AddKernel(n), /*heuristics=*/true);
  auto prepare_all = [&](const std::vector<uopd::v1::Graph>& kernels) {
    std::vector<Loaded> loaded;
    for (const uopd::v1::Graph& k : kernels) loaded.push_back(prepare(k, /*heuristics=*/true));
    return loaded;
  };
  const std::vector<Loaded> softmax = prepare_all(uopd::testing::SoftmaxKernels(rows, cols));
  const std::vector<Loaded> layernorm = prepare_all(uopd::testing::LayerNormKernels(rows, cols));
  Loaded rowsum = prepare(RowSumKernel(rows, cols));
  Loaded rowsum_wide = prepare(RowSumKernel(rows, cols), /*heuristics=*/true);
  Loaded colsum = prepare(uopd::testing::ColumnSumKernel(rows, cols));
  Loaded colsum_split = prepare(uopd::testing::ColumnSumKernel(rows, cols), /*heuristics=*/true);
  constexpr int kBatch = 10;
  auto queue = gpu.runtime().NewLaunchQueue();
  if (!queue.ok() || *queue == nullptr) return 1;
  auto run = [&](const Loaded& k, std::vector<void*> bufs) {
    auto dims = k.spec.launch_dims({});
    for (int i = 0; i < kBatch; ++i) {
      std::vector<int> after;
      if (i > 0) after.push_back(i - 1);
      if (!(*queue)->Submit(i, *k.program, bufs, {}, *dims, after).ok()) std::abort();
    }
    std::vector<uopd::KernelTime> times;
    int failed = -1;
    if (!(*queue)->Finish(&times, &failed).ok()) std::abort();
  };
  // Three kernels (reduction, reduction, elementwise) each batch, each after the one before.
  auto run_rows = [&](const std::vector<Loaded>& k, void* first, void* second, void* result) {
    const std::vector<std::vector<void*>> bufs = {
        {first, matrix}, {second, matrix, first}, {result, matrix, first, second}};
    int index = 0;
    for (int i = 0; i < kBatch; ++i) {
      for (size_t j = 0; j < k.size(); ++j, ++index) {
        std::vector<int> after;
        if (index > 0) after.push_back(index - 1);
        if (!(*queue)
                 ->Submit(index, *k[j].program, bufs[j], {}, *k[j].spec.launch_dims({}), after)
                 .ok()) {
          std::abort();
        }
      }
    }
    std::vector<uopd::KernelTime> times;
    int failed = -1;
    if (!(*queue)->Finish(&times, &failed).ok()) std::abort();
  };
  auto copy = [&](size_t bytes) {
    for (int i = 0; i < kBatch; ++i) {
      driver.MemcpyDtoD(reinterpret_cast<CUdeviceptr>(copy_dst),
                        reinterpret_cast<CUdeviceptr>(copy_src), bytes);
    }
    driver.CtxSynchronize();
  };
  void* split_sums = buffer(cols * 4, 0);
  void* wide_sums = buffer(rows * 4, 0);
  void *row_first = buffer(rows * 4, 0), *row_second = buffer(rows * 4, 0),
       *rows_out = buffer(rows * cols * 4, 0);
  std::vector<double> t_add, t_add_copy, t_sum, t_sum_copy, t_col, t_split, t_add4, t_softmax,
      t_layernorm, t_sum_wide;
  for (int rep = 0; rep < 30; ++rep) {
    double ta4 = uopd::bench::SecondsOf([&] { run(add_upcast, {out, a, b}); });
    double tsw = uopd::bench::SecondsOf([&] { run(rowsum_wide, {wide_sums, matrix}); });
    double tsm =
        uopd::bench::SecondsOf([&] { run_rows(softmax, row_first, row_second, rows_out); });
    double tln =
        uopd::bench::SecondsOf([&] { run_rows(layernorm, row_first, row_second, rows_out); });
    double ta = uopd::bench::SecondsOf([&] { run(add, {out, a, b}); });
    double tc = uopd::bench::SecondsOf([&] { copy(n * 6); });
    double ts = uopd::bench::SecondsOf([&] { run(rowsum, {sums, matrix}); });
    double tt = uopd::bench::SecondsOf([&] { copy(rows * cols * 2); });
    double tl = uopd::bench::SecondsOf([&] { run(colsum, {col_sums, matrix}); });
    double tp = uopd::bench::SecondsOf([&] { run(colsum_split, {split_sums, matrix}); });
    if (rep < 3) continue;  // warm-up
    t_add.push_back(ta);
    t_add_copy.push_back(tc);
    t_sum.push_back(ts);
    t_sum_copy.push_back(tt);
    t_col.push_back(tl);
    t_split.push_back(tp);
    t_add4.push_back(ta4);
    t_sum_wide.push_back(tsw);
    t_softmax.push_back(tsm);
    t_layernorm.push_back(tln);
  }
  float wide = 0;
  (void)alloc.CopyOut(&wide, static_cast<char*>(wide_sums) + 28, 4);
  if (wide != static_cast<float>(cols)) {
    std::fprintf(stderr, "wrong float4 row sum: %f\n", wide);
    return 1;
  }
  float check[4] = {0, 0, 0, 0};
  (void)alloc.CopyOut(&check[0], static_cast<char*>(out) + 400, 4);
  (void)alloc.CopyOut(&check[1], static_cast<char*>(sums) + 28, 4);
  (void)alloc.CopyOut(&check[2], static_cast<char*>(col_sums) + 28, 4);
  (void)alloc.CopyOut(&check[3], static_cast<char*>(split_sums) + 28, 4);
  // The layer norm ran last, on a matrix of ones: means 1, outputs 0.
  float norm[2] = {0, 1};
  (void)alloc.CopyOut(&norm[0], static_cast<char*>(row_first) + 12, 4);
  (void)alloc.CopyOut(&norm[1], static_cast<char*>(rows_out) + 20, 4);
  if (std::abs(norm[0] - 1.0f) > 1e-4f || norm[1] != 0.0f) {
    std::fprintf(stderr, "wrong layer norm: mean %f, output %f\n", norm[0], norm[1]);
    return 1;
  }
  if (check[0] != 3.0f || check[1] != static_cast<float>(cols) ||
      check[2] != static_cast<float>(rows) || check[3] != static_cast<float>(rows)) {
    std::fprintf(stderr, "wrong results: %f %f %f %f\n", check[0], check[1], check[2], check[3]);
    return 1;
  }
  // `copy_bytes`: what each of `c`'s copies moved (read plus written), when not `bytes`.
  auto report = [&](const char* name, double bytes, const std::vector<double>& k,
                    const std::vector<double>& c, double copy_bytes = 0) {
    if (copy_bytes == 0) copy_bytes = bytes;
    double kg = kBatch * bytes / uopd::bench::Percentile(k, 0.5) / 1e9,
           cg = kBatch * copy_bytes / uopd::bench::Percentile(c, 0.5) / 1e9;
    std::printf("%-36s %10.0f %14.0f %8.2fx\n", name, kg, cg, kg / cg);
  };
  std::printf("GPU: CUDA:0 (%s); median of 27 samples of 10 runs each\n",
              gpu.compiler().Target().c_str());
  std::printf("%-36s %10s %14s %9s\n", "workload", "GB/s", "DtoD copy GB/s", "ratio");
  report("elementwise add, 64M float32", 3.0 * n * 4, t_add, t_add_copy);
  report("elementwise add, heuristics (float4)", 3.0 * n * 4, t_add4, t_add_copy);
  report("row sum 8192x8192 float32", 1.0 * rows * cols * 4, t_sum, t_sum_copy);
  report("row sum, heuristics (float4 lanes)", 1.0 * rows * cols * 4, t_sum_wide, t_sum_copy);
  report("column sum 8192x8192 float32", 1.0 * rows * cols * 4, t_col, t_sum_copy);
  report("column sum, heuristics' split", 1.0 * rows * cols * 4, t_split, t_sum_copy);
  // Three reads of the matrix and one write, against the copy of the row sums' bytes.
  const double matrix_bytes = 1.0 * rows * cols * 4;
  report("softmax of 8192 rows of 8192", 4 * matrix_bytes, t_softmax, t_sum_copy, matrix_bytes);
  report("layer norm of 8192 rows of 8192", 4 * matrix_bytes, t_layernorm, t_sum_copy,
         matrix_bytes);
  return 0;
}
