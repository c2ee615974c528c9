// Randomized kernels through the whole CPU pipeline: every well-formed graph the generator makes
// must render, compile and run, or stop with OUT_OF_RANGE when an index leaves its buffer, and
// agree with the reference interpreter (tests/testing/reference_interpreter.cc). Anything else is
// a uopd bug (INTERNAL means we generated source LLVM rejects).
//
// Over 1,500 seeds (UOPD_RANDOM_KERNELS=1500) the only disagreements seen are the ones the
// semantics allow: reassociated float reductions seen through BITCAST or overflow, and the bits
// of NaNs that arithmetic produced (x86 makes negative ones) seen through BITCAST.
#include <cstdio>

#include "backends/cpu/cpu_device.h"
#include "gtest/gtest.h"
#include "tests/testing/random_kernel_check.h"

namespace uopd {
namespace {

TEST(RandomKernels, RenderCompileAndRunOnTheCpu) {
  ThreadPool pool(1);
  auto device = CreateCpuDevice(&pool);
  ASSERT_TRUE(device.ok()) << device.status();
  std::mt19937 data_rng(99);
  testing::RandomKernelOutcomes outcomes;
  const uint32_t kernels = testing::RandomKernelCount(400);
  for (uint32_t seed = 0; seed < kernels; ++seed) {
    testing::CheckRandomKernel(**device, seed, data_rng, outcomes);
  }
  // Reductions over rows of 32 to 101 elements (the kernels GPUs split among warp lanes).
  for (uint32_t seed = 0; seed < kernels / 4; ++seed) {
    testing::CheckRandomKernel(**device, seed, data_rng, outcomes, /*long_reductions=*/true);
  }
  EXPECT_GT(outcomes.completed, 0) << "no kernel ran to completion";
  EXPECT_GT(outcomes.stopped_out_of_range, 0) << "no kernel exercised a run-time bounds check";
  std::printf("%d kernels ran, %d stopped out of range; %d elements compared, %d left open\n",
              outcomes.completed.load(), outcomes.stopped_out_of_range.load(),
              outcomes.elements_compared.load(), outcomes.elements_unspecified.load());
  EXPECT_GT(outcomes.elements_compared, 10 * outcomes.elements_unspecified)
      << "most outputs must not depend on what the semantics leave open";
}

// The same kernels, 48 outputs long (divisible, so output axes can be upcast), each with a random
// list of valid opts (UPCAST, UNROLL, PADTO, THREAD, SWAP on whatever axes they apply to): every
// optimization must keep the kernel's meaning. UOPD_RANDOM_KERNELS=N runs more.
TEST(RandomKernels, RandomOptsKeepTheMeaningOnTheCpu) {
  ThreadPool pool(1);
  auto device = CreateCpuDevice(&pool);
  ASSERT_TRUE(device.ok()) << device.status();
  std::mt19937 data_rng(11), opt_rng(5);
  testing::RandomKernelOutcomes outcomes;
  const uint32_t kernels = testing::RandomKernelCount(400);
  for (uint32_t seed = 0; seed < kernels; ++seed) {
    testing::CheckRandomKernel(**device, seed, data_rng, outcomes,
                               /*long_reductions=*/seed % 3 == 0, &opt_rng, /*outputs=*/48);
  }
  EXPECT_GT(outcomes.completed, 0) << "no kernel ran to completion";
  EXPECT_GT(outcomes.elements_compared, 10 * outcomes.elements_unspecified);
}

// The CPU backend lowering kernels as for a GPU, its grid run as a loop.
absl::StatusOr<std::unique_ptr<Device>> CreateGpuLoweringDevice(ThreadPool& pool) {
  CpuDeviceOptions options;
  options.renderer.gpu_lowering = true;
  return CreateCpuDevice(&pool, options);
}

// The same kernels lowered as for a GPU (one flattened grid index, its guard, reductions as
// loops), run on the CPU with the grid as a loop: the GPU lowering on random kernels, no GPU.
TEST(RandomKernels, GpuLoweringRunsOnTheCpu) {
  ThreadPool pool(1);
  auto device = CreateGpuLoweringDevice(pool);
  ASSERT_TRUE(device.ok()) << device.status();
  std::mt19937 data_rng(7);
  testing::RandomKernelOutcomes outcomes;
  const uint32_t kernels = testing::RandomKernelCount(400) / 2;
  for (uint32_t seed = 0; seed < kernels; ++seed) {
    testing::CheckRandomKernel(**device, seed, data_rng, outcomes, /*long_reductions=*/seed % 2);
  }
  EXPECT_GT(outcomes.completed, 0) << "no kernel ran to completion";
  EXPECT_GT(outcomes.stopped_out_of_range, 0) << "no kernel exercised a run-time bounds check";
  EXPECT_GT(outcomes.elements_compared, 10 * outcomes.elements_unspecified);
}

// The same kernels with random GPU opt lists (LOCAL, GROUP, GROUPTOP, UPCAST, ...) lowered for a
// GPU and run through the work-group loops: LOCAL threads, GROUP reductions in shared memory
// after a barrier, against the reference interpreter.
TEST(RandomKernels, RandomGpuOptsKeepTheMeaningThroughWorkGroupLoops) {
  ThreadPool pool(1);
  auto device = CreateGpuLoweringDevice(pool);
  ASSERT_TRUE(device.ok()) << device.status();
  const OptTarget gpu = OptTarget::Cuda("sm_90");
  std::mt19937 data_rng(13), opt_rng(17);
  testing::RandomKernelOutcomes outcomes;
  const uint32_t kernels = testing::RandomKernelCount(400) / 2;
  for (uint32_t seed = 0; seed < kernels; ++seed) {
    testing::CheckRandomKernel(**device, seed, data_rng, outcomes,
                               /*long_reductions=*/seed % 3 == 0, &opt_rng, /*outputs=*/48, &gpu);
  }
  EXPECT_GT(outcomes.completed, 0) << "no kernel ran to completion";
  EXPECT_GT(outcomes.elements_compared, 10 * outcomes.elements_unspecified);
}

}  // namespace
}  // namespace uopd
