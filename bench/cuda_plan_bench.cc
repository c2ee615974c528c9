// Per-kernel overhead of ExecutionPlan runs on CUDA:0 against launching the same kernel straight
// through the driver on one stream with one synchronization at the end (the fastest a host can
// issue work), in one run: 1,000 tiny dependent kernels (a chain) and 1,000 independent ones,
// through the launch queue (streams joined by events, one wait), and one synchronous
// Program::Execute per kernel for comparison.
#include <cstdio>
#include <thread>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_driver.h"
#include "bench/bench_util.h"
#include "core/plan/execution_plan.h"
#include "core/program/caching_program_source.h"
#include "core/wire/decode.h"
#include "tests/testing/sample_kernels.h"

int main() {
  constexpr int kKernels = 1000;
  auto devices = uopd::CreateCudaDevices();
  if (!devices.ok()) {
    std::printf("no GPU: %s\n", std::string(devices.status().message()).c_str());
    return 0;
  }
  uopd::Device* gpu = devices->front().get();
  const uopd::CudaDriver& d = **uopd::CudaDriver::Load();
  uopd::ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  uopd::KernelCache cache;
  uopd::CachingProgramSource source(cache);
  auto ast = *uopd::DecodeKernelAst(uopd::testing::AddKernel(256));

  std::vector<uopd::BufferView> buffers;
  for (int i = 0; i < kKernels + 2; ++i) {
    buffers.push_back(
        *uopd::BufferView::Whole(*uopd::DeviceBuffer::Create(*gpu, 1024), uopd::Scalar::kFloat32));
  }
  std::vector<uopd::KernelBinding> chain, wide;
  for (int i = 0; i < kKernels; ++i) {
    chain.push_back({ast, gpu, {(i + 1) % 2, i % 2, 2}, {}});
    wide.push_back({ast, gpu, {i + 2, 0, 1}, {}});
  }
  auto chain_plan = uopd::ExecutionPlan::Build(buffers, chain, source, &pool);
  auto wide_plan = uopd::ExecutionPlan::Build(buffers, wide, source, &pool);
  if (!chain_plan.ok() || !wide_plan.ok()) {
    std::fprintf(stderr, "%s\n",
                 (chain_plan.ok() ? wide_plan.status() : chain_plan.status()).ToString().c_str());
    return 1;
  }

  // Baseline: the same CUBIN, loaded and launched through the driver directly.
  auto spec = gpu->renderer().Render(ast, ast->DefaultName());
  auto compiled = gpu->compiler().Compile(*spec);
  if (!spec.ok() || !compiled.ok()) return 1;
  CUmodule module;
  CUfunction function;
  CUstream stream;
  CUdeviceptr status;
  if (d.ModuleLoadData(&module, compiled->bytes.data()) != CUDA_SUCCESS ||
      d.ModuleGetFunction(&function, module, compiled->entry.c_str()) != CUDA_SUCCESS ||
      d.StreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      d.MemAlloc(&status, 4) != CUDA_SUCCESS) {
    return 1;
  }
  auto dims = *spec->launch_dims({});
  const auto& k0 = (*chain_plan)->kernels()[0];
  std::vector<CUdeviceptr> ptrs;
  for (void* p : k0.buffer_ptrs) ptrs.push_back(reinterpret_cast<CUdeviceptr>(p));
  std::vector<void*> params;
  for (CUdeviceptr& p : ptrs) params.push_back(&p);
  params.push_back(&status);
  auto driver = uopd::bench::Sample(3, 20, [&] {
    for (int i = 0; i < kKernels; ++i) {
      d.LaunchKernel(function, dims.global[0], dims.global[1], dims.global[2], dims.local[0],
                     dims.local[1], dims.local[2], 0, stream, params.data(), nullptr);
    }
    d.StreamSynchronize(stream);
  });
  auto bare = uopd::bench::Sample(3, 20, [&] {
    for (int i = 0; i < kKernels; ++i) {
      if (!k0.program->program->Execute(k0.buffer_ptrs, k0.vals, dims, nullptr).ok()) std::abort();
    }
  });
  auto run = [](uopd::ExecutionPlan& plan, bool sequential) {
    uopd::RunOptions options;
    options.sequential = sequential;
    if (auto timings = plan.ExecuteWithVars({}, options); !timings.ok()) {
      std::fprintf(stderr, "%s\n", timings.status().ToString().c_str());
      std::abort();
    }
  };
  auto chain_seq = uopd::bench::Sample(3, 20, [&] { run(**chain_plan, true); });
  auto chain_par = uopd::bench::Sample(3, 20, [&] { run(**chain_plan, false); });
  auto wide_par = uopd::bench::Sample(3, 20, [&] { run(**wide_plan, false); });

  auto us = [](const std::vector<double>& s) {
    return 1e6 * uopd::bench::Percentile(s, 0.5) / kKernels;
  };
  std::printf("1,000-kernel plans of a 256-element add on CUDA:0; median of 20 runs\n");
  std::printf("%-48s %10s %8s\n", "per kernel", "us", "ratio");
  std::printf("%-48s %10.2f %8s\n", "driver launches, one stream, one sync (baseline)", us(driver),
              "1.00x");
  std::printf("%-48s %10.2f %7.2fx\n", "Program::Execute loop", us(bare), us(bare) / us(driver));
  std::printf("%-48s %10.2f %7.2fx\n", "plan, chain, one synchronous Execute each", us(chain_seq),
              us(chain_seq) / us(driver));
  std::printf("%-48s %10.2f %7.2fx\n", "plan, chain, launch queue", us(chain_par),
              us(chain_par) / us(driver));
  std::printf("%-48s %10.2f %7.2fx\n", "plan, 1,000 independent, launch queue", us(wide_par),
              us(wide_par) / us(driver));
  return 0;
}
