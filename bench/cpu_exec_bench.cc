// Execution bandwidth of CPU kernels against memcpy of the same bytes, in one run:
//   - float32 elementwise add, 16M elements (reads 2 x 64 MiB, writes 64 MiB)
//   - row sum of a 4096 x 4096 float32 matrix (reads 64 MiB)
// GB/s counts bytes read plus bytes written; memcpy moves the same total (half read, half written).
#include <cstdio>
#include <cstring>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "bench/bench_util.h"
#include "core/ir/kernel_ast.h"
#include "core/wire/decode.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/sample_kernels.h"

namespace {

using uopd::testing::AddKernel;
using uopd::testing::RowSumKernel;

struct Loaded {
  uopd::ProgramSpec spec;
  std::shared_ptr<uopd::Program> program;
};

Loaded Prepare(uopd::Device& device, const uopd::v1::Graph& wire) {
  auto ast = uopd::DecodeKernelAst(wire);
  auto spec = device.renderer().Render(*ast, (*ast)->DefaultName());
  auto compiled = device.compiler().Compile(*spec);
  auto program = device.runtime().Load(*compiled, *spec);
  if (!program.ok()) {
    std::fprintf(stderr, "%s\n", program.status().ToString().c_str());
    std::exit(1);
  }
  return {*spec, *program};
}

void Report(const char* name, double bytes, const std::vector<double>& kernel,
            const std::vector<double>& copy) {
  double k = bytes / uopd::bench::Percentile(kernel, 0.5) / 1e9;
  double m = bytes / uopd::bench::Percentile(copy, 0.5) / 1e9;
  std::printf("%-34s %10.1f %12.1f %8.2fx\n", name, k, m, k / m);
}

}  // namespace

int main() {
  int threads = std::max(1u, std::thread::hardware_concurrency());
  uopd::ThreadPool pool(threads - 1);
  auto device = uopd::CreateCpuDevice(&pool);
  if (!device.ok()) return 1;
  uopd::Allocator& alloc = (*device)->allocator();
  const int64_t n = 16 << 20;
  const int64_t rows = 4096, cols = 4096;
  auto buf = [&](size_t bytes, float fill) {
    float* p = static_cast<float*>(*alloc.Allocate(bytes));
    for (size_t i = 0; i < bytes / 4; ++i) p[i] = fill;
    return p;
  };
  float *out = buf(n * 4, 0), *a = buf(n * 4, 1), *b = buf(n * 4, 2);
  float *matrix = buf(rows * cols * 4, 1), *sums = buf(rows * 4, 0);
  float *copy_src = buf(n * 6, 1), *copy_dst = buf(n * 6, 0);

  Loaded add = Prepare(**device, AddKernel(n));
  Loaded rowsum = Prepare(**device, RowSumKernel(rows, cols));
  // The same kernels on a device without a pool: one thread, like memcpy.
  auto single = uopd::CreateCpuDevice(nullptr);
  if (!single.ok()) return 1;
  Loaded add1 = Prepare(**single, AddKernel(n));
  Loaded rowsum1 = Prepare(**single, RowSumKernel(rows, cols));
  auto run = [](const Loaded& k, std::vector<void*> bufs) {
    auto dims = k.spec.launch_dims({});
    std::vector<int64_t> vals(k.spec.var_names.size(), 0);
    if (!k.program->Execute(bufs, vals, *dims, nullptr).ok()) std::abort();
  };
  std::printf("threads available to kernels: %d (memcpy: 1); median of 12 interleaved runs\n",
              threads);
  std::printf("%-34s %10s %12s %9s\n", "workload", "GB/s", "memcpy GB/s", "ratio");
  // Interleave kernel and memcpy samples so machine noise hits both alike.
  std::vector<double> t_add, t_copy_add, t_sum, t_copy_sum, t_add1, t_sum1;
  for (int rep = 0; rep < 12; ++rep) {
    t_add.push_back(uopd::bench::SecondsOf([&] { run(add, {out, a, b}); }));
    t_add1.push_back(uopd::bench::SecondsOf([&] { run(add1, {out, a, b}); }));
    t_sum1.push_back(uopd::bench::SecondsOf([&] { run(rowsum1, {sums, matrix}); }));
    t_copy_add.push_back(uopd::bench::SecondsOf([&] { std::memcpy(copy_dst, copy_src, n * 6); }));
    t_sum.push_back(uopd::bench::SecondsOf([&] { run(rowsum, {sums, matrix}); }));
    t_copy_sum.push_back(
        uopd::bench::SecondsOf([&] { std::memcpy(copy_dst, copy_src, rows * cols * 2); }));
  }
  if (out[123] != 3.0f || sums[7] != static_cast<float>(cols)) {
    std::fprintf(stderr, "wrong results: %f %f\n", out[123], sums[7]);
    return 1;
  }
  Report("elementwise add, 16M float32", 3.0 * n * 4, t_add, t_copy_add);
  Report("  same, kernel on 1 thread", 3.0 * n * 4, t_add1, t_copy_add);
  Report("row sum 4096x4096 float32", 1.0 * rows * cols * 4, t_sum, t_copy_sum);
  Report("  same, kernel on 1 thread", 1.0 * rows * cols * 4, t_sum1, t_copy_sum);
  return 0;
}
