// The GPU mode of the shared lowering (parallel ranges on a flattened grid index), checked
// without a GPU: the CPU backend runs the grid's threads as a loop, and every corpus case and
// plan must still match tinygrad.
#include <atomic>

#include "backends/cpu/cpu_allocator.h"
#include "backends/cpu/llvm_compiler.h"
#include "backends/cpu/llvm_renderer.h"
#include "backends/cpu/orc_runtime.h"
#include "core/corpus/corpus_runner.h"
#include "core/opt/optimize.h"
#include "core/program/caching_program_source.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/random_opts_source.h"

namespace uopd {
namespace {

// The CPU backend with its lowering in GPU mode: grid threads become a loop.
std::unique_ptr<Device> GpuLoweringDevice() {
  auto runtime = OrcRuntime::Create(nullptr);
  EXPECT_TRUE(runtime.ok()) << runtime.status();
  LlvmRendererOptions options;
  options.gpu_lowering = true;
  std::vector<CompilerPair> compilers;
  compilers.push_back({std::make_unique<LlvmRenderer>(options), std::make_unique<LlvmCompiler>()});
  return std::make_unique<Device>(DeviceSpec("CPU", 0), std::make_unique<CpuAllocator>(),
                                  std::move(compilers), std::move(*runtime));
}

TEST(GpuLowering, ReproducesTinygradOnTheCorpusWhenItsGridRunsAsALoop) {
  std::unique_ptr<Device> gpu_lowering = GpuLoweringDevice();
  Device& device = *gpu_lowering;
  // The grid really is in use: a 2 x 4 output is one flattened index split by div/mod.
  auto sample = LoadCorpusFile(testing::CorpusDir() + "/cases/red_sum_4d_2x3x4x5.json");
  ASSERT_TRUE(sample.ok()) << sample.status();
  auto spec = device.renderer().Render(*DecodeKernelAst(sample->kase.ast()), "grid");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_NE(spec->src.find("srem"), std::string::npos) << spec->src;

  KernelCache cache;
  CachingProgramSource source(cache);
  int passed = 0;
  for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
    absl::Status status = RunCorpusEntry(device, entry, {&source, nullptr});
    EXPECT_TRUE(status.ok()) << entry.path << ": " << status;
    passed += status.ok();
  }
  EXPECT_GT(passed, 380);
}

TEST(GpuLowering, RandomCudaOptListsKeepTheMeaningOfTheCorpus) {
  // Opt lists valid for an sm_90 GPU (LOCAL, GROUP, GROUPTOP, ... as a GPU gets them), run
  // through the GPU lowering: whatever the ranges' types become, the results stay tinygrad's.
  std::unique_ptr<Device> device = GpuLoweringDevice();
  KernelCache cache;
  CachingProgramSource source(cache);
  for (uint64_t seed : {1, 2}) {
    testing::RandomOptsSource random(source, seed, OptTarget::Cuda("sm_90"));
    for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
      absl::Status status = RunCorpusEntry(*device, entry, {&random, nullptr});
      EXPECT_TRUE(status.ok()) << entry.path << " (seed " << seed << ", opts "
                               << random.Describe(entry) << "): " << status;
    }
  }
}

TEST(GpuLowering, TinygradsOptimizedKernelsRunWithTheirWarpsAndLocalsAsThreads) {
  // tests/corpus_opt: kernels as tinygrad's optimizer left them for CUDA (LOCAL, GROUP_REDUCE,
  // a tensor core's WARP), with the outputs tinygrad's GPU emulator computed.
  std::unique_ptr<Device> device = GpuLoweringDevice();
  KernelCache cache;
  CachingProgramSource source(cache);
  auto files = ListCorpusFiles({std::string(UOPD_CORPUS_OPT_DIR) + "/cases"});
  ASSERT_TRUE(files.ok()) << files.status();
  int passed = 0, cuda = 0;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    ASSERT_TRUE(entry.ok()) << entry.status();
    if (entry->kase.target() != "CUDA") continue;
    ++cuda;
    absl::Status status = RunCorpusEntry(*device, *entry, {&source, nullptr});
    EXPECT_TRUE(status.ok()) << file << ": " << status;
    passed += status.ok();
  }
  EXPECT_EQ(passed, cuda);
  EXPECT_GE(cuda, 10);
}

// Optimizes every kernel with one GROUP (or GROUPTOP) opt of the first size it takes, so
// every reduction of the corpus that can meets in shared memory.
class GroupFirstSource : public ProgramSource {
 public:
  GroupFirstSource(ProgramSource& inner, OptOp op) : inner_(inner), op_(op) {}
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(Device& device,
                                                           std::shared_ptr<const KernelAst> ast,
                                                           const OptimizeRequest&,
                                                           const StopFlag* stop) override {
    const OptTarget target = OptTarget::Cuda("sm_90");
    if (!IsAlreadyOptimized(*ast)) {
      for (int size : {16, 8, 4, 2}) {
        auto optimized =
            OptimizeKernel(ast, target, OptimizeRequest{OptMode::kOpts, {Opt{op_, 0, size}}});
        if (!optimized.ok()) continue;
        auto loaded = inner_.Get(device, optimized->ast, OptimizeRequest{OptMode::kNone, {}}, stop);
        // The block's array of partial sums (LLVM: `%shN = alloca [64 x ...]`).
        if (loaded.ok() && (*loaded)->spec->src.find("%sh") != std::string::npos) ++shared;
        return loaded;
      }
    }
    return inner_.Get(device, ast, OptimizeRequest{OptMode::kNone, {}}, stop);
  }
  std::atomic<int> shared{0};

 private:
  ProgramSource& inner_;
  const OptOp op_;
};

// Optimizes every kernel as the CUDA backend's heuristics choose for an sm_90 GPU.
class GpuHeuristicsSource : public ProgramSource {
 public:
  explicit GpuHeuristicsSource(ProgramSource& inner) : inner_(inner) {}
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(Device& device,
                                                           std::shared_ptr<const KernelAst> ast,
                                                           const OptimizeRequest&,
                                                           const StopFlag* stop) override {
    auto optimized =
        OptimizeKernel(ast, OptTarget::Cuda("sm_90"), OptimizeRequest{OptMode::kHeuristic, {}});
    if (!optimized.ok()) return optimized.status();
    if (!optimized->applied.empty()) ++optimized_;
    return inner_.Get(device, optimized->ast, OptimizeRequest{OptMode::kNone, {}}, stop);
  }
  std::atomic<int> optimized_{0};

 private:
  ProgramSource& inner_;
};

TEST(GpuLowering, TheGpuHeuristicsKeepTheMeaningOfTheCorpus) {
  std::unique_ptr<Device> device = GpuLoweringDevice();
  KernelCache cache;
  CachingProgramSource source(cache);
  GpuHeuristicsSource heuristics(source);
  for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
    absl::Status status = RunCorpusEntry(*device, entry, {&heuristics, nullptr});
    EXPECT_TRUE(status.ok()) << entry.path << ": " << status;
  }
  EXPECT_GT(heuristics.optimized_.load(), 200);
}

TEST(GpuLowering, GroupReductionsInSharedMemoryKeepTheMeaningOfTheCorpus) {
  // Work-group loops run each block's threads part by part between barriers: the partial sums
  // meet in the block's array as a GPU's shared memory would hold them.
  std::unique_ptr<Device> device = GpuLoweringDevice();
  KernelCache cache;
  CachingProgramSource source(cache);
  for (OptOp op : {OptOp::kGroup, OptOp::kGroupTop}) {
    GroupFirstSource group(source, op);
    for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
      if (entry.is_plan) continue;
      absl::Status status = RunCorpusEntry(*device, entry, {&group, nullptr});
      EXPECT_TRUE(status.ok()) << entry.path << " (" << static_cast<int>(op) << "): " << status;
    }
    EXPECT_GT(group.shared.load(), 35);
  }
}

}  // namespace
}  // namespace uopd
