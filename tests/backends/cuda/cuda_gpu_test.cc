// The CUDA backend on a GPU (CUDA:0): the corpus, plans on streams, random kernels, vector
// accesses, tensor cores and the heuristics' timed choices, against tinygrad and the reference
// interpreter. Skipped, saying why, on machines without a GPU; bench/gpu_check.sh runs them
// where one is lent.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/cuda/cuda_device.h"
#include "core/codegen/codegen_target.h"
#include "core/corpus/corpus_runner.h"
#include "core/opt/optimize.h"
#include "core/plan/execution_plan.h"
#include "core/program/caching_program_source.h"
#include "core/search/kernel_search.h"
#include "core/util/thread_pool.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/random_kernel_check.h"
#include "tests/testing/random_kernels.h"
#include "tests/testing/reference_interpreter.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tensor_core_opts.h"

namespace uopd {
namespace {

// Tests that need a GPU: skipped, saying why, where CUDA:0 is absent.
class CudaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto devices = CreateCudaDevices();
    if (!devices.ok()) {
      GTEST_SKIP() << "no GPU here (" << devices.status().message()
                   << "): GPU execution not tested";
    }
    devices_ = *std::move(devices);
  }
  Device& gpu() { return *devices_.front(); }

  std::vector<std::unique_ptr<Device>> devices_;
  KernelCache cache_;
  CachingProgramSource source_{cache_};
  ThreadPool pool_{3};
};

TEST_F(CudaGpuTest, RunsTheCorpusOnTheGpu) {
  int passed = 0;
  for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
    absl::Status status = RunCorpusEntry(gpu(), entry, {&source_, &pool_});
    EXPECT_TRUE(status.ok()) << entry.path << ": " << status;
    passed += status.ok();
  }
  EXPECT_GT(passed, 380);
}

// A GPU buffer of `values` (float32 or int32 by T), as a whole-storage view.
template <typename T>
BufferView GpuBuffer(Device& gpu, const std::vector<T>& values) {
  auto storage = DeviceBuffer::Create(gpu, values.size() * sizeof(T));
  EXPECT_TRUE(storage.ok()) << storage.status();
  EXPECT_TRUE(
      gpu.allocator().CopyIn((*storage)->data(), values.data(), values.size() * sizeof(T)).ok());
  return *BufferView::Whole(*storage, std::is_same_v<T, float> ? Scalar::kFloat32 : Scalar::kInt32);
}

template <typename T>
std::vector<T> Read(Device& gpu, const BufferView& view) {
  std::vector<T> host(view.bytes() / sizeof(T));
  EXPECT_TRUE(gpu.allocator().CopyOut(host.data(), view.data(), view.bytes()).ok());
  return host;
}

// Plans on a GPU go to its launch queue: a 200-kernel chain (each adds 1, alternating two
// buffers: read-after-write and write-after-read on every step) interleaved with 100
// independent kernels, which take the other streams. Run twice, the queue is reused.
TEST_F(CudaGpuTest, PlansRunOnStreamsJoinedByEvents) {
  Device& gpu = this->gpu();
  auto add = *DecodeKernelAst(testing::AddKernel(1024));
  std::vector<BufferView> buffers = {GpuBuffer(gpu, std::vector<float>(1024, 0)),
                                     GpuBuffer(gpu, std::vector<float>(1024, 0)),
                                     GpuBuffer(gpu, std::vector<float>(1024, 1))};
  std::vector<KernelBinding> kernels;
  for (int i = 0; i < 200; ++i) {
    kernels.push_back({add, &gpu, {i % 2 == 0 ? 1 : 0, i % 2 == 0 ? 0 : 1, 2}, {}});
    if (i % 2 == 1) {
      buffers.push_back(GpuBuffer(gpu, std::vector<float>(1024, 0)));
      kernels.push_back({add, &gpu, {static_cast<int>(buffers.size()) - 1, 2, 2}, {}});
    }
  }
  auto plan = ExecutionPlan::Build(buffers, kernels, source_, &pool_);
  UOPD_ASSERT_OK(plan);
  auto timings = (*plan)->ExecuteWithVars({});
  UOPD_ASSERT_OK(timings);
  EXPECT_EQ(timings->size(), kernels.size());
  EXPECT_EQ(Read<float>(gpu, buffers[0]), std::vector<float>(1024, 200));
  for (size_t b = 3; b < buffers.size(); ++b) {
    EXPECT_EQ(Read<float>(gpu, buffers[b]), std::vector<float>(1024, 2)) << "buffer " << b;
  }
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));  // the chain starts from 200 in buffer 0
  EXPECT_EQ(Read<float>(gpu, buffers[0]), std::vector<float>(1024, 400));
}

// A kernel of a queued plan that fails its bounds check fails the run, named; the next run
// with good indices succeeds (the status words were cleared).
TEST_F(CudaGpuTest, AQueuedPlanReportsTheKernelWhoseBoundsCheckFailed) {
  Device& gpu = this->gpu();
  auto add = *DecodeKernelAst(testing::AddKernel(4));
  auto gather = *DecodeKernelAst(testing::GatherKernel());
  std::vector<BufferView> buffers = {
      GpuBuffer(gpu, std::vector<float>(4, 0)),
      GpuBuffer(gpu, std::vector<float>{10, 11, 12, 13, 14, 15, 16, 17}),
      GpuBuffer(gpu, std::vector<int32_t>{0, 9, 1, 2}), GpuBuffer(gpu, std::vector<float>(4, 0)),
      GpuBuffer(gpu, std::vector<float>(4, 1))};
  auto plan = ExecutionPlan::Build(
      buffers,
      {{add, &gpu, {3, 4, 4}, {}}, {gather, &gpu, {0, 1, 2}, {}}, {add, &gpu, {3, 4, 4}, {}}},
      source_, &pool_);
  UOPD_ASSERT_OK(plan);
  EXPECT_TRUE(testing::StatusIs((*plan)->ExecuteWithVars({}), absl::StatusCode::kOutOfRange,
                                {"kernel 1", "gather", "buffer slot 1"}));
  std::vector<int32_t> good = {7, 0, 3, 3};
  UOPD_ASSERT_OK(gpu.allocator().CopyIn(buffers[2].data(), good.data(), 16));
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read<float>(gpu, buffers[0]), (std::vector<float>{17, 10, 13, 13}));
}

// A grid past the driver's 32-bit sizes is refused, not truncated into a partial run; so is a
// wrong number of buffers.
TEST_F(CudaGpuTest, RefusesGridsPastTheGpuLimitsAndWrongParameterCounts) {
  auto ast = DecodeKernelAst(testing::AddKernel(4));
  UOPD_ASSERT_OK(ast);
  auto program = source_.Get(gpu(), *ast, {}, nullptr);
  UOPD_ASSERT_OK(program);
  LaunchDims dims;
  dims.global = {int64_t{1} << 32, 1, 1};
  dims.local = {kCudaBlockThreads, 1, 1};
  std::vector<void*> buffers(3, nullptr);
  EXPECT_TRUE(testing::StatusIs((*program)->program->Execute(buffers, {}, dims, nullptr),
                                absl::StatusCode::kOutOfRange, {"past the GPU's limits"}));
  // Parameters are positional: a wrong count is refused rather than shifting the rest.
  std::vector<void*> two(2, nullptr);
  dims.global = {1, 1, 1};
  EXPECT_TRUE(testing::StatusIs((*program)->program->Execute(two, {}, dims, nullptr),
                                absl::StatusCode::kInvalidArgument, {"takes 3 buffers"}));
}

// The random kernels of the CPU backend's test, run on the GPU against the reference
// interpreter: CUDA C semantics (casts, integer wrap-around, shifts, division by zero, NaN,
// half types) and the status-word bounds checks, beyond what the corpus covers.
TEST_F(CudaGpuTest, RandomKernelsMatchTheReferenceOnTheGpu) {
  testing::RandomKernelOutcomes outcomes;
  // UOPD_RANDOM_SEEDS="58,L260" runs just those, one at a time (L: with long reductions).
  if (const char* seeds = std::getenv("UOPD_RANDOM_SEEDS"); seeds != nullptr) {
    for (absl::string_view seed : absl::StrSplit(seeds, ',')) {
      const bool long_reductions = absl::ConsumePrefix(&seed, "L");
      uint32_t n = 0;
      ASSERT_TRUE(absl::SimpleAtoi(seed, &n)) << seed;
      std::mt19937 data_rng(99 + n + (long_reductions ? testing::RandomKernelCount(400) : 0));
      testing::CheckRandomKernel(gpu(), n, data_rng, outcomes, long_reductions);
    }
    return;
  }
  // Then as many with long reductions over rows, which warps share among their lanes.
  const int kernels = static_cast<int>(testing::RandomKernelCount(400));
  // NVRTC dominates: compile and run on every core, each seed with its own data.
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  pool.ParallelFor(2 * kernels, [&](int i) {
    std::mt19937 data_rng(99 + i);
    testing::CheckRandomKernel(gpu(), i % kernels, data_rng, outcomes,
                               /*long_reductions=*/i >= kernels);
  });
  std::printf("%d kernels ran, %d stopped out of range; %d elements compared, %d left open\n",
              outcomes.completed.load(), outcomes.stopped_out_of_range.load(),
              outcomes.elements_compared.load(), outcomes.elements_unspecified.load());
  EXPECT_GT(outcomes.elements_compared, 10 * outcomes.elements_unspecified)
      << "most outputs must not depend on what the semantics leave open";
}

TEST_F(CudaGpuTest, VectorAccessesOfViewsAtAnyOffsetReadAndWriteTheirOwnElements) {
  // A buffer view may start at any element of its base, so a 16-byte access may be misaligned
  // (a fault that would end the context): such threads move one element at a time.
  auto ast = DecodeKernelAst(testing::AddKernel(1024));
  UOPD_ASSERT_OK(ast);
  auto chosen =
      OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), {OptMode::kOpts, {Opt{OptOp::kUpcast, 0, 4}}});
  UOPD_ASSERT_OK(chosen);
  auto spec = gpu().renderer().Render(chosen->ast, "vector_add");
  UOPD_ASSERT_OK(spec);
  auto compiled = gpu().compiler().Compile(*spec);
  UOPD_ASSERT_OK(compiled);
  auto program = gpu().runtime().Load(*compiled, *spec);
  UOPD_ASSERT_OK(program);
  auto dims = spec->launch_dims({});
  UOPD_ASSERT_OK(dims);
  std::vector<float> a(1030), b(1030);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(3 * i + 1);
  }
  for (int shift : {0, 1, 2, 3}) {  // elements: 4, 8 and 12 bytes off a 16-byte boundary
    BufferView out = GpuBuffer(gpu(), std::vector<float>(1030, -1));
    BufferView in_a = GpuBuffer(gpu(), a), in_b = GpuBuffer(gpu(), b);
    auto at = [&](const BufferView& v) { return static_cast<char*>(v.data()) + 4 * shift; };
    std::vector<void*> buffers = {at(out), at(in_a), at(in_b)};
    UOPD_ASSERT_OK((*program)->Execute(buffers, {}, *dims, nullptr));
    const std::vector<float> got = Read<float>(gpu(), out);
    for (int i = 0; i < 1030; ++i) {
      const bool written = i >= shift && i < shift + 1024;
      ASSERT_EQ(got[i], written ? a[i] + b[i] : -1) << "element " << i << ", shift " << shift;
    }
  }
}

TEST_F(CudaGpuTest, TensorCoreMatmulsMatchTheReferenceOnTheGpu) {
  // mma.sync against the reference interpreter, on inputs every summation order sums alike:
  // checks the hardware's fragment layouts that the CPU oracle takes from tinygrad's emulator.
  // `m` x `k` times `k` x `n` with `opts`.
  auto check = [&](int m, int k, int n, v1::DType::Scalar in, const std::vector<Opt>& opts) {
    SCOPED_TRACE(absl::StrCat(m, "x", k, "x", n, " ", OptsToString(opts)));
    auto ast = DecodeKernelAst(testing::Matmul(m, k, n, in, v1::DType::FLOAT32));
    UOPD_ASSERT_OK(ast);
    auto chosen = OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), {OptMode::kOpts, opts});
    UOPD_ASSERT_OK(chosen);
    const bool bf16 = in == v1::DType::BFLOAT16;
    std::vector<testing::HostBuffer> buffers = {testing::HostBuffer{std::string(m * n * 4, '\0')},
                                                testing::SmallExactValues(m * k, 1, bf16),
                                                testing::SmallExactValues(k * n, 7, bf16)};
    std::vector<std::string> reference;
    for (const testing::HostBuffer& b : buffers) reference.push_back(b.bytes);
    UOPD_ASSERT_OK(testing::Interpret(**ast, reference, {}));
    UOPD_ASSERT_OK(testing::RunAstOn(gpu(), chosen->ast, buffers));
    EXPECT_EQ(buffers[0].bytes, reference[0]);
  };
  struct Case {
    v1::DType::Scalar in;
    int select;
  };
  for (const Case& c :
       {Case{v1::DType::FLOAT16, -1}, Case{v1::DType::BFLOAT16, -1}, Case{v1::DType::FLOAT16, 3}}) {
    Opt tc{OptOp::kTc, 0, 0};
    tc.tc = {c.select, 0, 1};
    check(64, 64, 64, c.in,
          {tc, Opt{OptOp::kUpcast, 0, 4}, Opt{OptOp::kUpcast, 0, 4}, Opt{OptOp::kLocal, 0, 2}});
  }
  // Padded: masked fragment loads read 0 past each edge, proven in bounds, so the
  // instruction runs (not the written-out form) and the stores past the edges are dropped.
  auto padded = DecodeKernelAst(testing::Matmul(33, 17, 9, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(padded);
  for (const std::vector<Opt>& opts :
       testing::TensorCoreOptLists(*padded, OptTarget::Cuda("sm_80"), 3, 2)) {
    check(33, 17, 9, v1::DType::FLOAT16, opts);
  }
}

// The heuristics' close choices on this GPU (core/opt/gpu_heuristic.h): tensor cores against
// tinygrad's list without them, the column split and the warp's float4 row sum against tinygrad's
// lists. Every contender computes what the kernel as written computes on the GPU (none is dropped
// as different) and is timed; the choice is recorded for every worker sharing the cache.
TEST_F(CudaGpuTest, TheHeuristicsCloseChoicesComputeTheKernelAndAreTimed) {
  const OptTarget target = OptTarget::Cuda(gpu().compilers().front().compiler->Target());
  for (const v1::Graph& wire :
       {testing::Matmul(1024, 1024, 1024, v1::DType::FLOAT16, v1::DType::FLOAT32),
        testing::ColumnSumKernel(4096, 4096), testing::RowSumKernel(4096, 4096)}) {
    auto ast = DecodeKernelAst(wire);
    UOPD_ASSERT_OK(ast);
    SCOPED_TRACE((*ast)->DefaultName());
    const std::vector<std::vector<Opt>> contenders = HeuristicContendersFor(*ast, target);
    ASSERT_GE(contenders.size(), 2u);
    SearchOptions options;
    options.verify_candidates = true;
    auto timed = TimeOptCandidates(gpu(), *ast, contenders, options);
    UOPD_ASSERT_OK(timed);
    EXPECT_TRUE(timed->differed.empty());
    for (size_t i = 0; i < contenders.size(); ++i) {
      EXPECT_FALSE(std::isinf(timed->seconds[i])) << OptsToString(contenders[i]);
      std::printf("  %s %-40s %9.1f us\n", (*ast)->DefaultName().c_str(),
                  OptsToString(contenders[i]).c_str(), timed->seconds[i] * 1e6);
    }
    auto chosen = source_.optimizer().ResolveHeuristic(gpu(), *ast, nullptr);
    UOPD_ASSERT_OK(chosen);
    EXPECT_EQ(chosen->mode, OptMode::kOpts);
  }
}

}  // namespace
}  // namespace uopd
