// Per-kernel launch overhead of ExecutionPlan runs against calling the same loaded kernel
// directly, in one run: a plan of 1,000 tiny dependent kernels (a chain) and one of 1,000
// independent kernels, each run repeatedly.
#include <cstdio>
#include <cstring>
#include <thread>

#include "backends/cpu/cpu_device.h"
#include "bench/bench_util.h"
#include "core/plan/execution_plan.h"
#include "core/program/caching_program_source.h"
#include "core/wire/decode.h"
#include "tests/testing/graph_builder.h"

namespace {

using uopd::testing::GraphBuilder;

uopd::v1::Graph AddOne(int64_t n) {
  GraphBuilder g;
  int out = g.Buffer(0, uopd::v1::DType::FLOAT32, n);
  int r = g.Range(g.Index(n), 0);
  int in = g.Buffer(1, uopd::v1::DType::FLOAT32, n);
  int sum = g.Node(uopd::v1::Node::ADD, uopd::v1::DType::FLOAT32,
                   {g.Load(in, r), g.Float(uopd::v1::DType::FLOAT32, 1.0)});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})});
}

}  // namespace

int main() {
  constexpr int kKernels = 1000;
  int threads = std::max(1u, std::thread::hardware_concurrency());
  uopd::ThreadPool pool(threads - 1);
  auto device = uopd::CreateCpuDevice(&pool);
  if (!device.ok()) return 1;
  uopd::KernelCache cache;
  uopd::CachingProgramSource source(cache);
  auto ast = *uopd::DecodeKernelAst(AddOne(16));

  std::vector<uopd::BufferView> buffers;
  for (int i = 0; i < kKernels + 1; ++i) {
    buffers.push_back(*uopd::BufferView::Whole(*uopd::DeviceBuffer::Create(**device, 64),
                                               uopd::Scalar::kFloat32));
  }
  std::vector<uopd::KernelBinding> chain, wide;
  for (int i = 0; i < kKernels; ++i) {
    chain.push_back({ast, device->get(), {(i + 1) % 2, i % 2}, {}});
    wide.push_back({ast, device->get(), {i + 1, 0}, {}});
  }
  auto t0 = std::chrono::steady_clock::now();
  auto chain_plan = uopd::ExecutionPlan::Build(buffers, chain, source, &pool);
  double prepare = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto wide_plan = uopd::ExecutionPlan::Build(buffers, wide, source, &pool);
  if (!chain_plan.ok() || !wide_plan.ok()) return 1;

  const auto& kernel = (*chain_plan)->kernels()[0];
  auto dims = kernel.program->spec->launch_dims({});
  auto bare = uopd::bench::Sample(3, 20, [&] {
    for (int i = 0; i < kKernels; ++i) {
      if (!kernel.program->program->Execute(kernel.buffer_ptrs, kernel.vals, *dims, nullptr).ok())
        std::abort();
    }
  });
  auto run = [](uopd::ExecutionPlan& plan, bool sequential) {
    uopd::RunOptions options;
    options.sequential = sequential;
    if (!plan.ExecuteWithVars({}, options).ok()) std::abort();
  };
  auto chain_par = uopd::bench::Sample(3, 20, [&] { run(**chain_plan, false); });
  auto chain_seq = uopd::bench::Sample(3, 20, [&] { run(**chain_plan, true); });
  auto wide_par = uopd::bench::Sample(3, 20, [&] { run(**wide_plan, false); });

  auto us = [](const std::vector<double>& s) {
    return 1e6 * uopd::bench::Percentile(s, 0.5) / kKernels;
  };
  std::printf("1,000-kernel plans of a 16-element add; median of 20 runs; %d threads\n", threads);
  std::printf("prepare (build) of the chain plan: %.1f ms\n", prepare * 1e3);
  std::printf("%-44s %10s %8s\n", "per kernel", "us", "ratio");
  std::printf("%-44s %10.3f %8s\n", "bare Program::Execute loop (baseline)", us(bare), "1.00x");
  std::printf("%-44s %10.3f %7.2fx\n", "plan, chain, sequential mode", us(chain_seq),
              us(chain_seq) / us(bare));
  std::printf("%-44s %10.3f %7.2fx\n", "plan, chain, dataflow scheduler", us(chain_par),
              us(chain_par) / us(bare));
  std::printf("%-44s %10.3f %7.2fx\n", "plan, 1,000 independent, dataflow scheduler", us(wide_par),
              us(wide_par) / us(bare));
  return 0;
}
