// The GPU mode of the shared lowering (parallel ranges on a flattened grid index), checked
// without a GPU: the CPU backend runs the grid's threads as a loop, and every corpus case and
// plan must still match tinygrad.
#include <atomic>
#include <cmath>
#include <functional>
#include <utility>

#include "backends/cpu/cpu_allocator.h"
#include "backends/cpu/llvm_compiler.h"
#include "backends/cpu/llvm_renderer.h"
#include "backends/cpu/orc_runtime.h"
#include "core/cache/memory_tier.h"
#include "core/codegen/pipeline.h"
#include "core/codegen/program_spec_builder.h"
#include "core/corpus/corpus_runner.h"
#include "core/opt/optimize.h"
#include "core/program/caching_program_source.h"
#include "core/search/kernel_search.h"
#include "core/util/status_macros.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/random_opts_source.h"
#include "tests/testing/reference_interpreter.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tensor_core_opts.h"

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

// The CPU's LLVM compiler presented as an sm_80 GPU's, so that the optimizer targets a CUDA GPU
// (tensor cores, locals) while the kernels run on the CPU through the GPU lowering.
class Sm80OnTheCpu : public Compiler {
 public:
  std::string Target() const override { return "sm_80"; }
  std::string Identity() const override { return "cpu-as-sm_80/" + llvm_.Identity(); }

 private:
  absl::StatusOr<CompiledKernel> CompileImpl(const ProgramSpec& spec,
                                             const CompileOptions& options) const override {
    return llvm_.Compile(spec, options);
  }
  LlvmCompiler llvm_;
};

// Whether `spec`'s kernel went through the TC opt (its AST holds the instruction).
bool HasTensorCores(const ProgramSpec& spec) {
  for (const UOp* node : Toposort(spec.ast->root)) {
    if (node->op() == Op::kWmma) return true;
  }
  return false;
}

// A runtime whose programs get the first element of every output wrong where `wrong` says so:
// what a GPU on which a lowering is miscompiled would do.
class MiscomputingRuntime : public RuntimeFactory {
 public:
  MiscomputingRuntime(std::unique_ptr<RuntimeFactory> inner,
                      std::function<bool(const ProgramSpec&)> wrong)
      : inner_(std::move(inner)), wrong_(std::move(wrong)) {}
  absl::StatusOr<std::shared_ptr<Program>> Load(const CompiledKernel& kernel,
                                                const ProgramSpec& spec) override {
    UOPD_ASSIGN_OR_RETURN(std::shared_ptr<Program> program, inner_->Load(kernel, spec));
    if (!wrong_(spec)) return program;
    return std::make_shared<Wrong>(std::move(program), spec.outs);
  }

 private:
  class Wrong : public Program {
   public:
    Wrong(std::shared_ptr<Program> inner, std::vector<int> outs)
        : inner_(std::move(inner)), outs_(std::move(outs)) {}
    absl::Status Execute(absl::Span<void* const> buffers, absl::Span<const int64_t> vals,
                         const LaunchDims& dims, const StopFlag* stop) const override {
      UOPD_RETURN_IF_ERROR(inner_->Execute(buffers, vals, dims, stop));
      for (int slot : outs_) static_cast<unsigned char*>(buffers[slot])[3] ^= 0x40;  // float32
      return absl::OkStatus();
    }

   private:
    std::shared_ptr<Program> inner_;
    std::vector<int> outs_;
  };
  std::unique_ptr<RuntimeFactory> inner_;
  std::function<bool(const ProgramSpec&)> wrong_;
};

// A "CUDA" device whose kernels run on the CPU through the GPU lowering; with `wrong`, the
// programs it accepts compute something else.
std::unique_ptr<Device> CudaOnTheCpu(std::function<bool(const ProgramSpec&)> wrong = nullptr) {
  auto orc = OrcRuntime::Create(nullptr);
  EXPECT_TRUE(orc.ok()) << orc.status();
  std::unique_ptr<RuntimeFactory> runtime = std::move(*orc);
  if (wrong) runtime = std::make_unique<MiscomputingRuntime>(std::move(runtime), std::move(wrong));
  LlvmRendererOptions options;
  options.gpu_lowering = true;
  std::vector<CompilerPair> compilers;
  compilers.push_back({std::make_unique<LlvmRenderer>(options), std::make_unique<Sm80OnTheCpu>()});
  return std::make_unique<Device>(DeviceSpec("CUDA", 0), std::make_unique<CpuAllocator>(),
                                  std::move(compilers), std::move(runtime));
}

// The opts the heuristics resolve to on `device` (a fresh cache), and whether a timing record
// was made.
std::pair<std::string, bool> Resolved(const Device& device,
                                      const std::shared_ptr<const KernelAst>& ast,
                                      SearchOptions search = {}) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache shared(std::move(tiers));
  CachingProgramSource source(shared, 16, OptMode::kHeuristic, search);
  auto chosen = source.optimizer().ResolveHeuristic(device, ast, nullptr);
  EXPECT_TRUE(chosen.ok()) << chosen.status();
  if (!chosen.ok()) return {"", false};
  EXPECT_EQ(chosen->mode, OptMode::kOpts);
  const bool recorded = source.optimizer()
                            .FindSearchRecord("CUDA", device.compilers().front(), *ast, "heuristic")
                            .has_value();
  return {OptsToString(chosen->opts), recorded};
}

bool NamesTensorCores(const std::string& opts) { return opts.find("TC") != std::string::npos; }

// out[50 + 10 * r0 + r1] = 1 over GLOBAL ranges r0 < n0 and r1 < n1, with n0 and n1 variables
// of [-5, 10]: every access proven within out's 150 elements, as a range is [0, end - 1].
v1::Graph StoreOverTwoSymbolicGridRanges() {
  testing::GraphBuilder g;
  int out = g.Buffer(0, v1::DType::INT32, 150);
  int r0 = g.Range(g.Var("n0", -5, 10), 0, v1::RangeArg::GLOBAL);
  int r1 = g.Range(g.Var("n1", -5, 10), 1, v1::RangeArg::GLOBAL);
  int at = g.Node(v1::Node::ADD, v1::DType::INDEX, {g.RowMajor(r0, 10, r1), g.Index(50)});
  return g.Sink({g.End(g.Store(g.Target(out, at), g.Int(v1::DType::INT32, 1)), {r0, r1})});
}

// Grid ranges with negative ends have no threads, as loops would have no iterations. Before,
// two negative ends multiplied to a positive total and threads got negative range values
// (n0 = -2, n1 = -3: thread 3 had r0 = -1 and wrote element 40, past what the proof allowed;
// found by a review helper).
TEST(GpuLowering, GridRangesWithNegativeEndsHaveNoThreads) {
  std::unique_ptr<Device> device = GpuLoweringDevice();
  for (auto [n0, n1] : {std::pair{-2, -3}, std::pair{-5, -5}, std::pair{-1, 4}, std::pair{3, 4}}) {
    std::vector<testing::HostBuffer> buffers = {
        testing::HostBuffer::Of(std::vector<int32_t>(150, -1))};
    UOPD_ASSERT_OK(testing::RunOn(*device, StoreOverTwoSymbolicGridRanges(), buffers,
                                  {{"n0", n0}, {"n1", n1}}));
    const std::vector<int32_t> out = buffers[0].As<int32_t>();
    for (int i = 0; i < 150; ++i) {
      const int r0 = (i - 50) / 10, r1 = (i - 50) % 10;
      const bool written = i >= 50 && r0 < n0 && r1 < n1;
      ASSERT_EQ(out[i], written ? 1 : -1) << "n0=" << n0 << " n1=" << n1 << " element " << i;
    }
  }
  // CUDA's launch: no blocks.
  auto ast = DecodeKernelAst(StoreOverTwoSymbolicGridRanges());
  ASSERT_TRUE(ast.ok()) << ast.status();
  auto cuda = LowerForTarget(*ast, "k", CodegenTarget::CudaGrid(), {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  ProgramSpec spec = SpecFromLinearProgram(cuda->program, "CUDA", *ast);
  spec.global_size = cuda->global_size;
  for (auto [n0, n1, blocks] :
       {std::tuple{-2, -3, 0}, std::tuple{-2, 5, 0}, std::tuple{10, 10, 1}}) {
    auto dims = spec.launch_dims({{"n0", n0}, {"n1", n1}});
    ASSERT_TRUE(dims.ok()) << dims.status();
    EXPECT_EQ(dims->global[0], blocks) << "n0=" << n0 << " n1=" << n1;
  }
}

// A GPU on which the tensor core lowering computes something else: the timing drops it, and
// tinygrad's list without tensor cores is what every worker runs. Where every contender is
// wrong, only the kernel as written is.
TEST(GpuLowering, AWrongTensorCoreLoweringIsNeverWhatRuns) {
  auto ast = DecodeKernelAst(testing::Matmul(64, 64, 64, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(ast);
  const auto [without, recorded] = Resolved(*CudaOnTheCpu(HasTensorCores), *ast);
  EXPECT_FALSE(without.empty());
  EXPECT_FALSE(NamesTensorCores(without)) << without;
  EXPECT_TRUE(recorded);
  auto optimized = [](const ProgramSpec& spec) {
    for (const UOp* node : Toposort(spec.ast->root)) {
      if (node->op() == Op::kRange && node->arg().axis_type != AxisType::kLoop &&
          node->arg().axis_type != AxisType::kReduce && node->arg().axis_type != AxisType::kGlobal)
        return true;
    }
    return false;
  };
  const auto [written, recorded_written] = Resolved(*CudaOnTheCpu(optimized), *ast);
  EXPECT_EQ(written, "");
  EXPECT_TRUE(recorded_written);
}

// Where nothing can be timed (the kernel's buffers exceed the search's scratch bound, or the time
// for timing runs out first), a GPU does not run tensor cores unchecked: tinygrad's list without
// them, and no record.
TEST(GpuLowering, TensorCoresNoTimingCheckedAreNotWhatRuns) {
  auto ast = DecodeKernelAst(testing::Matmul(64, 64, 64, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(ast);
  SearchOptions tiny;
  tiny.max_scratch_bytes = 1024;
  SearchOptions no_time;
  no_time.budget = absl::ZeroDuration();
  for (const SearchOptions& search : {tiny, no_time}) {
    const auto [chosen, recorded] = Resolved(*CudaOnTheCpu(), *ast, search);
    EXPECT_FALSE(chosen.empty());
    EXPECT_FALSE(NamesTensorCores(chosen)) << chosen;
    EXPECT_FALSE(recorded);
  }
}

// The GPU heuristics' close choices for a half matmul, tensor cores and tinygrad's list without
// them, as a GPU times them: both compute what the kernel as written computes on the made-up
// inputs (a tensor core multiplies exactly where the kernel as written rounds each product to
// half), so neither is dropped, and the timed choice is recorded for every worker.
TEST(GpuLowering, TheHeuristicsTensorCoresPassTheTimingsCheckAgainstTheKernelAsWritten) {
  std::unique_ptr<Device> device = CudaOnTheCpu();
  auto ast =
      DecodeKernelAst(testing::Matmul(256, 256, 256, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(ast);
  const std::vector<std::vector<Opt>> contenders =
      HeuristicContendersFor(*ast, OptTarget::Cuda("sm_80"));
  ASSERT_EQ(contenders.size(), 2u);
  ASSERT_EQ(contenders[0].front().op, OptOp::kTc);
  SearchOptions options;
  options.verify_candidates = true;
  auto timed = TimeOptCandidates(*device, *ast, contenders, options);
  UOPD_ASSERT_OK(timed);
  EXPECT_TRUE(timed->differed.empty());
  for (double seconds : timed->seconds) EXPECT_FALSE(std::isinf(seconds));
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache shared(std::move(tiers));
  CachingProgramSource source(shared);
  auto chosen = source.optimizer().ResolveHeuristic(*device, *ast, nullptr);
  UOPD_ASSERT_OK(chosen);
  EXPECT_EQ(chosen->mode, OptMode::kOpts);
  EXPECT_TRUE(source.optimizer()
                  .FindSearchRecord("CUDA", device->compilers().front(), **ast, "heuristic")
                  .has_value());
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

// Runs `wire` optimized as `request` asks for an sm_90 GPU through the work-group loops and the
// reference interpreter on the same float inputs; with `shared`, the shared memory must be in
// use.
void ExpectGpuLoweringMatchesTheReference(const v1::Graph& wire, const OptimizeRequest& request,
                                          std::vector<testing::HostBuffer> buffers, bool shared) {
  std::unique_ptr<Device> device = GpuLoweringDevice();
  auto ast = DecodeKernelAst(wire);
  ASSERT_TRUE(ast.ok()) << ast.status();
  auto optimized = OptimizeKernel(*ast, OptTarget::Cuda("sm_90"), request);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  auto spec = device->renderer().Render(optimized->ast, "grouped");
  ASSERT_TRUE(spec.ok()) << spec.status();
  if (shared) {
    EXPECT_NE(spec->src.find("%sh"), std::string::npos) << "no shared array:\n" << spec->src;
  }
  std::vector<std::string> reference;
  for (const testing::HostBuffer& b : buffers) reference.push_back(b.bytes);
  ASSERT_TRUE(testing::Interpret(**ast, reference, {}).ok());
  absl::Status ran = testing::RunAstOn(*device, optimized->ast, buffers);
  ASSERT_TRUE(ran.ok()) << ran;
  std::vector<float> want(reference[0].size() / 4);
  std::memcpy(want.data(), reference[0].data(), reference[0].size());
  std::vector<float> got = buffers[0].As<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3 * std::abs(want[i]));
}

void ExpectGroupMatchesTheReference(const v1::Graph& wire, const OptimizeRequest& request,
                                    std::vector<testing::HostBuffer> buffers) {
  ExpectGpuLoweringMatchesTheReference(wire, request, std::move(buffers), /*shared=*/true);
}
void ExpectGroupMatchesTheReference(const v1::Graph& wire, const std::vector<Opt>& opts,
                                    std::vector<testing::HostBuffer> buffers) {
  ExpectGroupMatchesTheReference(wire, OptimizeRequest{OptMode::kOpts, opts}, std::move(buffers));
}

testing::HostBuffer Floats(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 37) % 101) / 101.0f;
  testing::HostBuffer b;
  b.bytes.assign(reinterpret_cast<const char*>(v.data()), n * sizeof(float));
  return b;
}

TEST(GpuLowering, AGroupHoistedOutOfAnotherReductionMeetsInSharedMemory) {
  // The variance with GROUP on k, the mean's axis: the mean is hoisted out of the outer sum's
  // body, so its barrier comes after the outer accumulator's definition (the work-group loops
  // wrote invalid IR for it).
  ExpectGroupMatchesTheReference(
      testing::Variance(8, 64), {Opt{OptOp::kGroup, 1, 16}},
      {testing::HostBuffer{std::string(8 * 4, '\0')}, Floats(8 * 64, 3)});
}

TEST(GpuLowering, AGroupOfAReductionHoldingAnotherMeetsInSharedMemory) {
  // The variance with GROUPTOP on j, the outer sum's axis (tinygrad accepts it; uopd refused
  // it as "inside another reduce" before).
  ExpectGroupMatchesTheReference(
      testing::Variance(8, 64), {Opt{OptOp::kGroupTop, 0, 16}},
      {testing::HostBuffer{std::string(8 * 4, '\0')}, Floats(8 * 64, 3)});
}

TEST(GpuLowering, AWholeTensorSumMeetsInSharedMemory) {
  // total = sum_i x[i] with tinygrad's GROUPTOP for small outputs: one group of 16 threads (a
  // serial loop in one thread before).
  using v1::DType;
  using v1::Node;
  testing::GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 1);
  int x = g.Buffer(1, DType::FLOAT32, 1024);
  int r = g.Range(g.Index(1024), 0, v1::RangeArg::REDUCE);
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(x, r), {r});
  v1::Graph wire = g.Sink({g.Store(g.Target(out, g.Index(0)), sum)});
  ExpectGroupMatchesTheReference(wire, {Opt{OptOp::kGroupTop, 0, 16}},
                                 {testing::HostBuffer{std::string(4, '\0')}, Floats(1024, 1)});
}

TEST(GpuLowering, AGroupAppliedAfterALocalMeetsWithItsMembersStridedAsInTinygrad) {
  // LOCAL on j, then GROUP on i: tinygrad numbers the LOCAL (the older axis) fastest, so a
  // group's 8 members are 8 threads apart, and neighbouring threads read neighbouring columns.
  ExpectGroupMatchesTheReference(testing::ColumnSumKernel(64, 64),
                                 {Opt{OptOp::kLocal, 0, 8}, Opt{OptOp::kGroup, 0, 8}},
                                 {testing::HostBuffer{std::string(64 * 4, '\0')}, Floats(4096, 2)});
}

TEST(GpuLowering, TheHeuristicsSplitOfAColumnSumKeepsItsMeaning) {
  // core/opt/column_split.h: LOCAL(0, 32) and GROUP(0, 8), partials 32 threads apart.
  ExpectGroupMatchesTheReference(
      testing::ColumnSumKernel(512, 64), OptimizeRequest{OptMode::kHeuristic, {}},
      {testing::HostBuffer{std::string(64 * 4, '\0')}, Floats(512 * 64, 2)});
}

TEST(GpuLowering, RegisterArraysAreEachThreadsOwn) {
  // Threads of the grid, run one after another here, each with the array to itself.
  ExpectGpuLoweringMatchesTheReference(
      testing::RegisterRowSumKernel(300, 17), OptimizeRequest{OptMode::kHeuristic, {}},
      {testing::HostBuffer{std::string(300 * 4, '\0')}, Floats(300 * 17, 2)}, /*shared=*/false);
  ExpectGpuLoweringMatchesTheReference(testing::RegisterAttentionKernel(16, 8),
                                       OptimizeRequest{OptMode::kHeuristic, {}},
                                       {testing::HostBuffer{std::string(16 * 8 * 4, '\0')},
                                        Floats(16 * 8, 1), Floats(16 * 8, 3), Floats(16 * 8, 2)},
                                       /*shared=*/false);
}

TEST(GpuLowering, SoftmaxAndLayerNormWithTheGpuHeuristicsKeepTheirMeaning) {
  // Row reductions, then an elementwise pass reading them back (its rows upcast to float4).
  const int64_t rows = 64, cols = 256;
  std::vector<float> sums = Floats(rows, 2).As<float>();  // sums and variances: never 0
  for (float& v : sums) v += 0.5f;
  const testing::HostBuffer positive = testing::HostBuffer::Of(sums);
  for (const std::vector<v1::Graph>& kernels :
       {testing::SoftmaxKernels(rows, cols), testing::LayerNormKernels(rows, cols)}) {
    for (size_t i = 0; i < kernels.size(); ++i) {
      SCOPED_TRACE(kernels[i].nodes(kernels[i].nodes_size() - 1).arg().kernel().name());
      const int64_t outputs = i + 1 < kernels.size() ? rows : rows * cols;
      ExpectGpuLoweringMatchesTheReference(kernels[i], OptimizeRequest{OptMode::kHeuristic, {}},
                                           {testing::HostBuffer{std::string(outputs * 4, '\0')},
                                            Floats(rows * cols, 3), Floats(rows, 1), positive},
                                           /*shared=*/false);
    }
  }
}

// A half matmul (float accumulator) optimized with `opts` for an sm_80 GPU, run through the
// work-group loops with each tensor core instruction written out, equals the reference.
void ExpectTensorCoreMatmulMatchesTheReference(int64_t m, int64_t k, int64_t n,
                                               const std::vector<Opt>& opts,
                                               v1::DType::Scalar in = v1::DType::FLOAT16,
                                               testing::MatmulVariant variant = {}) {
  std::unique_ptr<Device> device = GpuLoweringDevice();
  auto ast = DecodeKernelAst(testing::Matmul(m, k, n, in, v1::DType::FLOAT32, variant));
  ASSERT_TRUE(ast.ok()) << ast.status();
  auto optimized = OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), {OptMode::kOpts, opts});
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  bool wmma = false;
  for (const UOp* node : Toposort(optimized->ast->root)) wmma |= node->op() == Op::kWmma;
  EXPECT_TRUE(wmma) << "the TC opt left no tensor core instruction";
  std::vector<testing::HostBuffer> buffers = {
      testing::HostBuffer{std::string(m * n * 4, '\0')},
      testing::SmallExactValues(m * k, 1, in == v1::DType::BFLOAT16),
      testing::SmallExactValues(k * n, 7, in == v1::DType::BFLOAT16)};
  std::vector<std::string> reference;
  for (const testing::HostBuffer& b : buffers) reference.push_back(b.bytes);
  ASSERT_TRUE(testing::Interpret(**ast, reference, {}).ok());
  absl::Status ran = testing::RunAstOn(*device, optimized->ast, buffers);
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(buffers[0].bytes, reference[0]) << "tensor core matmul differs from the reference";
}

// tinygrad's TC opt with use_tensor_cores 1; `select` indexes sm_80's cores (-1: the first
// that fits, m16n8k16 for half inputs; 3: m16n8k8 half -> float).
Opt TensorCoreOpt(int select = -1) {
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {select, 0, 1};
  return tc;
}

TEST(GpuLowering, ATensorCoreMatmulComputesWhatTheReferenceDoes) {
  // One m16n8k16 instruction per block of the output, K = 64 summed over four of them.
  ExpectTensorCoreMatmulMatchesTheReference(32, 64, 16, {TensorCoreOpt()});
}

TEST(GpuLowering, TheBfloat16TensorCoreComputesWhatTheReferenceDoes) {
  ExpectTensorCoreMatmulMatchesTheReference(32, 32, 16, {TensorCoreOpt()}, v1::DType::BFLOAT16);
}

TEST(GpuLowering, TheSmallerHalfTensorCoreComputesWhatTheReferenceDoes) {
  ExpectTensorCoreMatmulMatchesTheReference(16, 32, 8, {TensorCoreOpt(3)});
}

TEST(GpuLowering, TensorCoresWithPaddingAndRandomOptsAfterKeepAHalfMatmulsMeaning) {
  // Sizes no core divides (tc_opt 2 pads them), each of the three axis choices, then two opts
  // drawn from every valid extension (the search's own), as a search would try them.
  auto ast = DecodeKernelAst(testing::Matmul(40, 24, 24, v1::DType::FLOAT16, v1::DType::FLOAT32));
  ASSERT_TRUE(ast.ok()) << ast.status();
  int lists = 0;
  for (int select : {-1, 3}) {  // m16n8k16, m16n8k8
    for (const std::vector<Opt>& opts :
         testing::TensorCoreOptLists(*ast, OptTarget::Cuda("sm_80"), 3, 2, select)) {
      SCOPED_TRACE(OptsToString(opts));
      ExpectTensorCoreMatmulMatchesTheReference(40, 24, 24, opts);
      ++lists;
    }
  }
  EXPECT_GE(lists, 6);
}

TEST(GpuLowering, APaddedTensorCoreMatmulWhoseSummandPaddingMasksKeepsItsMeaning) {
  // (a * 2) @ b with K = 24 padded to 32: 0 * 2 is not provably 0 (2 could have been inf), so
  // PADTO masks the summand; the mask must go to the operands, not become one (the core took
  // the mask as A and the product as B).
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {-1, 2, 1};
  ExpectTensorCoreMatmulMatchesTheReference(32, 24, 16, {tc}, v1::DType::FLOAT16, {.a_scale = 2});
}

TEST(GpuLowering, ATensorCoreMatmulWithTinygradsHeuristicOptsComputesWhatTheReferenceDoes) {
  // tinygrad's heuristic for a 64^3 half matmul on sm_80 (docs/OPTIMIZER.md section 12).
  ExpectTensorCoreMatmulMatchesTheReference(64, 64, 64,
                                            {TensorCoreOpt(), Opt{OptOp::kUpcast, 0, 4},
                                             Opt{OptOp::kUpcast, 0, 4}, Opt{OptOp::kLocal, 0, 2}});
}

}  // namespace
}  // namespace uopd
