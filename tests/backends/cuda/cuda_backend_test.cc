// The CUDA backend without a GPU: every corpus kernel renders to CUDA C and compiles with NVRTC
// for sm_90 and sm_80 on this machine, and the lowering's choices show in the source and in
// ptxas's report. What runs on a GPU is in cuda_gpu_test.cc (the same test program).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_renderer.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "backends/cuda/ptxas_report.h"
#include "core/cache/cache_key.h"
#include "core/cache/memory_tier.h"
#include "core/codegen/pipeline.h"
#include "core/corpus/corpus_runner.h"
#include "core/opt/optimize.h"
#include "core/opt/search_space.h"
#include "core/program/caching_program_source.h"
#include "core/util/status_macros.h"
#include "core/util/thread_pool.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/random_kernel_check.h"
#include "tests/testing/random_kernels.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tensor_core_opts.h"

namespace uopd {
namespace {

// The number of `.param` lines of the PTX entry `name`.
int EntryParams(const std::string& ptx, const std::string& name) {
  size_t at = ptx.find(absl::StrCat(".entry ", name, "("));
  if (at == std::string::npos) return -1;
  size_t end = ptx.find(')', at);
  int params = 0;
  for (size_t p = ptx.find(".param", at); p != std::string::npos && p < end;
       p = ptx.find(".param", p + 1)) {
    ++params;
  }
  return params;
}

using LabelledAsts = std::vector<std::pair<std::string, v1::Graph>>;

// Runs `check(i)` for every kernel of `asts` on all cores but one; each answer that is not
// empty is a failure, reported with the kernel's label.
void CheckEachInParallel(const LabelledAsts& asts, const std::function<std::string(int)>& check) {
  std::mutex mu;
  std::vector<std::string> failures;
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  pool.ParallelFor(static_cast<int>(asts.size()), [&](int i) {
    std::string why = check(i);
    if (why.empty()) return;
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back(absl::StrCat(asts[i].first, ": ", why));
  });
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
}

// Empty when ptxas reports that `kernel` keeps its values in registers and its shared arrays
// fit a block's kCudaSharedBytes; what it reports otherwise. `most_registers` keeps the highest
// count.
std::string ResourcesProblem(const CompiledKernel& kernel, std::atomic<int>& most_registers) {
  if (!kernel.resources.has_value()) return "ptxas gave no report";
  const KernelResources& used = *kernel.resources;
  for (int most = most_registers.load();
       used.registers > most && !most_registers.compare_exchange_weak(most, used.registers);) {
  }
  if (used.spilled_bytes == 0 && used.shared_bytes <= kCudaSharedBytes) return "";
  return absl::StrCat(used.registers, " registers, ", used.spilled_bytes, " bytes spilled, ",
                      used.shared_bytes, " bytes of shared memory");
}

TEST(CudaBackend, EveryCorpusKernelCompilesForSm90AndSm80WithoutAGpu) {
  auto asts = testing::CorpusAsts();
  ASSERT_GT(asts.size(), 300u);
  auto asts14 = testing::Corpus14Asts();  // tinygrad 0.14's kernels, in their own dialect
  ASSERT_GT(asts14.size(), 50u);
  asts.insert(asts.end(), asts14.begin(), asts14.end());
  CudaRenderer renderer;
  std::vector<std::unique_ptr<NvrtcCompiler>> compilers;
  for (const char* arch : {"sm_90", "sm_80"}) {
    auto compiler = NvrtcCompiler::Create(arch);
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    compilers.push_back(*std::move(compiler));
  }
  std::atomic<int> compiled{0};
  std::atomic<int> most_registers{0};
  CheckEachInParallel(asts, [&](int i) -> std::string {
    auto ast = DecodeKernelAst(asts[i].second);
    if (!ast.ok()) return ast.status().ToString();
    auto spec = renderer.Render(*ast, (*ast)->DefaultName());
    if (!spec.ok()) return spec.status().ToString();
    const int expected_params = spec->buf_count + static_cast<int>(spec->var_names.size()) + 1;
    for (const auto& compiler : compilers) {
      auto kernel = compiler->Compile(*spec);
      if (!kernel.ok()) return kernel.status().ToString();
      if (kernel->bytes.size() < 4 || kernel->bytes.compare(0, 4,
                                                            "\x7f"
                                                            "ELF") != 0) {
        return absl::StrCat(compiler->Target(), ": the CUBIN is not an ELF image");
      }
      // The default kernels hold their values in registers and fit a block's shared memory.
      if (std::string problem = ResourcesProblem(*kernel, most_registers); !problem.empty()) {
        return absl::StrCat(compiler->Target(), ": ", problem);
      }
      int params = EntryParams(kernel->ptx, spec->name);
      if (params != expected_params) {
        return absl::StrCat(compiler->Target(), ": PTX entry ", spec->name, " has ", params,
                            " parameters, expected ", expected_params);
      }
      compiled.fetch_add(1);
    }
    return "";
  });
  EXPECT_EQ(compiled.load(), static_cast<int>(2 * asts.size()));
  std::printf("[  NOTE    ] at most %d registers per thread (ptxas)\n", most_registers.load());
}

TEST(CudaBackend, CorpusKernelsWithRandomGpuOptListsCompileWithNvrtc) {
  // Opt lists a client may send for a GPU (LOCAL, GROUP, GROUPTOP, UPCAST, ...): rendered as
  // CUDA C and compiled, every corpus kernel with one drawn at random.
  auto asts = testing::CorpusAsts();
  CudaRenderer renderer;
  auto compiler = NvrtcCompiler::Create("sm_90");
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  const OptTarget target = OptTarget::Cuda("sm_90");
  std::atomic<int> compiled{0};
  CheckEachInParallel(asts, [&](int i) -> std::string {
    auto ast = DecodeKernelAst(asts[i].second);
    if (!ast.ok()) return ast.status().ToString();
    std::vector<Opt> opts;
    if (!IsAlreadyOptimized(**ast)) opts = RandomOptList(*ast, target, 1000 + i, 1 + i % 4);
    auto failed = [&](const absl::Status& status) {
      return absl::StrCat("with ", OptsToString(opts), ": ", status.ToString());
    };
    auto optimized = OptimizeKernel(*ast, target, OptimizeRequest{OptMode::kOpts, opts});
    if (!optimized.ok()) return failed(optimized.status());
    auto spec = renderer.Render(optimized->ast, (*ast)->DefaultName());
    if (!spec.ok()) return failed(spec.status());
    auto kernel = (*compiler)->Compile(*spec);
    if (!kernel.ok()) return failed(kernel.status());
    compiled.fetch_add(1);
    return "";
  });
  EXPECT_EQ(compiled.load(), static_cast<int>(asts.size()));
}

TEST(CudaBackend, TinygradsOptimizedKernelsCompileWithNvrtc) {
  // tests/corpus_opt's CUDA kernels as tinygrad's optimizer left them (LOCAL, GROUP_REDUCE, a
  // tensor core's WARP): their locals and warp are threads of a block, groups meet in shared
  // memory, and NVRTC compiles every one.
  auto files = ListCorpusFiles({std::string(UOPD_CORPUS_OPT_DIR) + "/cases"});
  UOPD_ASSERT_OK(files);
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  int compiled = 0, shared = 0;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    UOPD_ASSERT_OK(entry);
    if (entry->kase.target() != "CUDA") continue;
    auto ast = DecodeKernelAst(entry->kase.ast());
    UOPD_ASSERT_OK(ast);
    auto spec = CudaRenderer().Render(*ast, (*ast)->DefaultName());
    UOPD_ASSERT_OK(spec) << file;
    UOPD_EXPECT_OK((*compiler)->Compile(*spec).status()) << file;
    ++compiled;
    shared += spec->src.find("__syncthreads()") != std::string::npos;
  }
  EXPECT_GE(compiled, 10);
  EXPECT_GE(shared, 3);
}

TEST(CudaBackend, TheHeuristicsChoicesCompileWithoutSpills) {
  // What the CUDA backend's heuristics choose for every corpus kernel, compiled for sm_80: ptxas
  // keeps every value in registers and the shared arrays fit a block's 48 KiB.
  auto asts = testing::CorpusAsts();
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  const OptTarget target = OptTarget::Cuda("sm_80");
  EXPECT_EQ(target.block_threads, kCudaBlockThreads);  // the optimizer's picture of a launch
  std::atomic<int> optimized{0};
  std::atomic<int> most_registers{0};
  CheckEachInParallel(asts, [&](int i) -> std::string {
    auto ast = DecodeKernelAst(asts[i].second);
    if (!ast.ok()) return ast.status().ToString();
    auto chosen = OptimizeKernel(*ast, target, OptimizeRequest{OptMode::kHeuristic, {}});
    if (!chosen.ok()) return chosen.status().ToString();
    auto spec = CudaRenderer().Render(chosen->ast, (*ast)->DefaultName());
    if (!spec.ok()) return spec.status().ToString();
    auto kernel = (*compiler)->Compile(*spec);
    if (!kernel.ok()) return kernel.status().ToString();
    if (std::string problem = ResourcesProblem(*kernel, most_registers); !problem.empty()) {
      return absl::StrCat(OptsToString(chosen->applied), ": ", problem);
    }
    optimized += !chosen->applied.empty();
    return "";
  });
  EXPECT_GT(optimized.load(), 200);
  std::printf("[  NOTE    ] %d of %zu kernels optimized, at most %d registers per thread\n",
              optimized.load(), asts.size(), most_registers.load());
}

TEST(CudaBackend, MapsParallelRangesToTheGridAndKeepsReductionsAsLoops) {
  auto entry = LoadCorpusFile(testing::CorpusDir() + "/cases/red_sum_4d_2x3x4x5.json");
  UOPD_ASSERT_OK(entry);
  auto ast = DecodeKernelAst(entry->kase.ast());
  UOPD_ASSERT_OK(ast);
  auto spec = CudaRenderer().Render(*ast, "r_test");
  UOPD_ASSERT_OK(spec);
  auto dims = spec->launch_dims({});
  UOPD_ASSERT_OK(dims);
  EXPECT_EQ(dims->global[0], 1) << "8 outputs fit one block";
  EXPECT_EQ(dims->local[0], kCudaBlockThreads);
  EXPECT_NE(spec->src.find("blockIdx.x"), std::string::npos) << spec->src;
  EXPECT_NE(spec->src.find("for ("), std::string::npos) << "the reduction stays a loop:\n"
                                                        << spec->src;
  EXPECT_TRUE(spec->var_names.empty()) << "GPU kernels take no core variables";
}

// tinygrad 0.14's register placeholders: one array per thread, declared in the kernel, indexed
// like memory; the output ranges on the grid, the accumulation a loop.
TEST(CudaBackend, RegisterArraysAreArraysOfEachThread) {
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  for (const v1::Graph& wire :
       {testing::RegisterRowSumKernel(4096, 64), testing::RegisterAttentionKernel(64, 16)}) {
    auto ast = DecodeKernelAst(wire);
    UOPD_ASSERT_OK(ast);
    auto spec = CudaRenderer().Render(*ast, (*ast)->DefaultName());
    UOPD_ASSERT_OK(spec);
    EXPECT_NE(spec->src.find("float r"), std::string::npos) << spec->src;
    EXPECT_NE(spec->src.find("blockIdx.x"), std::string::npos) << spec->src;
    auto kernel = (*compiler)->Compile(*spec);
    UOPD_ASSERT_OK(kernel);
    ASSERT_TRUE(kernel->resources.has_value());
    EXPECT_EQ(kernel->resources->spilled_bytes, 0);
  }
}

// Which reductions a warp's lanes share (backends/cuda/warp_reduction.h), decided without a GPU.
absl::StatusOr<ProgramSpec> RenderCuda(const v1::Graph& wire) {
  UOPD_ASSIGN_OR_RETURN(auto ast, DecodeKernelAst(wire));
  return CudaRenderer().Render(ast, ast->DefaultName());
}
bool WarpShared(const ProgramSpec& spec) {
  return spec.src.find("uopd_shfl_xor(acc") != std::string::npos;
}

// Register arrays met by the GPU lowering (a review helper's findings; each failed before).
TEST(CudaBackend, RegisterArraysInGridsAndWarpReductions) {
  using S = v1::DType;
  {  // A grid range whose end reads a register: the array is defined before the grid index
     // (before: std::out_of_range from flat_hash_map::at, which ends the daemon).
    testing::GraphBuilder g;
    int out = g.Buffer(0, S::FLOAT32, 16);
    int reg = g.Registers(0, S::INT32, 1);
    int end = g.Node(v1::Node::CAST, S::INDEX, {g.Load(reg, g.Index(0))});
    int i = g.Range(end, 0, v1::RangeArg::GLOBAL);
    int stored = g.Store(g.Target(out, i), g.Float(S::FLOAT32, 1));
    auto spec = RenderCuda(g.Sink({g.End(stored, {i})}));
    EXPECT_TRUE(spec.ok() || spec.status().code() == absl::StatusCode::kInvalidArgument)
        << spec.status();
  }
  {  // A register stored inside a row reduction: the warp's lanes must not share the loop (each
     // lane's array would hold its own share of what the iterations carry).
    constexpr int64_t kCols = 1000;
    testing::GraphBuilder g;
    int out = g.Buffer(0, S::FLOAT32, 64);
    int x = g.Buffer(1, S::FLOAT32, 64 * kCols);
    int reg = g.Registers(0, S::FLOAT32, 1);
    int row = g.Range(g.Index(64), 0);
    int col = g.Range(g.Index(kCols), 1, v1::RangeArg::REDUCE);
    int kept =
        g.After(reg, {g.Store(g.Target(reg, g.Index(0)), g.Load(x, g.RowMajor(row, kCols, col)))});
    int sum = g.Reduce(v1::Node::ADD, S::FLOAT32, g.Load(kept, g.Index(0)), {col});
    auto spec = RenderCuda(g.Sink({g.End(g.Store(g.Target(out, row), sum), {row})}));
    UOPD_ASSERT_OK(spec);
    EXPECT_FALSE(WarpShared(*spec)) << spec->src;
  }
  {  // All of an END's ranges on the grid: a statement depending on one of them runs in each
     // thread (before: UNIMPLEMENTED, the grid's slowest range taken for the innermost loop).
    testing::GraphBuilder g;
    int out = g.Buffer(0, S::FLOAT32, 64);
    int reg = g.Registers(0, S::FLOAT32, 1);
    int a = g.Range(g.Index(8), 0);
    int b = g.Range(g.Index(8), 1);
    int set =
        g.Store(g.Target(g.After(reg, {b}), g.Index(0)), g.Node(v1::Node::CAST, S::FLOAT32, {b}));
    int stored =
        g.Store(g.Target(out, g.RowMajor(a, 8, b)), g.Load(g.After(reg, {set}), g.Index(0)));
    UOPD_EXPECT_OK(RenderCuda(g.Sink({g.End(stored, {a, b})})).status());
  }
}

TEST(CudaBackend, WarpsShareRowReductions) {
  auto spec = RenderCuda(testing::RowSumKernel(8192, 8192));
  UOPD_ASSERT_OK(spec);
  EXPECT_TRUE(WarpShared(*spec)) << spec->src;
  EXPECT_NE(spec->src.find("+= 32)"), std::string::npos) << "lane-strided loop:\n" << spec->src;
  EXPECT_NE(spec->src.find("if (uopd_lane == 0) data0["), std::string::npos) << spec->src;
  auto dims = spec->launch_dims({});
  UOPD_ASSERT_OK(dims);
  EXPECT_EQ(dims->global[0], 8192 / (kCudaBlockThreads / 32)) << "one warp per row";
}

TEST(CudaBackend, TheHeuristicsKeepWarpSharedRowReductionsWithFloat4Loads) {
  // The warp's lanes share the row (not tinygrad's opts), each lane reading 16 bytes a load.
  auto rows = DecodeKernelAst(testing::RowSumKernel(8192, 8192));
  UOPD_ASSERT_OK(rows);
  auto chosen =
      OptimizeKernel(*rows, OptTarget::Cuda("sm_80"), OptimizeRequest{OptMode::kHeuristic, {}});
  UOPD_ASSERT_OK(chosen);
  EXPECT_EQ(OptsToString(chosen->applied), "UNROLL(0, 4)");
  auto spec = CudaRenderer().Render(chosen->ast, "r_rows");
  UOPD_ASSERT_OK(spec);
  EXPECT_TRUE(WarpShared(*spec)) << spec->src;
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  auto kernel = (*compiler)->Compile(*spec);
  UOPD_ASSERT_OK(kernel);
  EXPECT_NE(kernel->ptx.find("ld.global.nc.v4"), std::string::npos) << kernel->ptx;
  // Too short for a warp's lanes with 4 columns each: as written.
  auto short_rows = DecodeKernelAst(testing::RowSumKernel(8192, 64));
  UOPD_ASSERT_OK(short_rows);
  chosen = OptimizeKernel(*short_rows, OptTarget::Cuda("sm_80"),
                          OptimizeRequest{OptMode::kHeuristic, {}});
  UOPD_ASSERT_OK(chosen);
  EXPECT_EQ(OptsToString(chosen->applied).find("UNROLL(0, 4)"), std::string::npos);
  // A matmul gets tinygrad's locals and upcasts.
  auto matmul = DecodeKernelAst(testing::Matmul(512, 512, 512));
  UOPD_ASSERT_OK(matmul);
  chosen =
      OptimizeKernel(*matmul, OptTarget::Cuda("sm_80"), OptimizeRequest{OptMode::kHeuristic, {}});
  UOPD_ASSERT_OK(chosen);
  const std::string opts = OptsToString(chosen->applied);
  EXPECT_NE(opts.find("LOCAL"), std::string::npos) << opts;
  EXPECT_NE(opts.find("UPCAST"), std::string::npos) << opts;
}

TEST(CudaBackend, ColumnReductionsKeepAThreadPerOutput) {
  // Neighbouring threads read neighbouring columns already; lanes would read a row apart.
  auto spec = RenderCuda(testing::ColumnSumKernel(8192, 8192));
  UOPD_ASSERT_OK(spec);
  EXPECT_FALSE(WarpShared(*spec)) << spec->src;
  auto dims = spec->launch_dims({});
  UOPD_ASSERT_OK(dims);
  EXPECT_EQ(dims->global[0], 8192 / kCudaBlockThreads);
}

TEST(CudaBackend, ShortReductionsKeepAThreadPerOutput) {
  auto spec = RenderCuda(testing::RowSumKernel(8192, 16));
  UOPD_ASSERT_OK(spec);
  EXPECT_FALSE(WarpShared(*spec)) << "16 iterations would leave half the lanes idle";
}

TEST(CudaBackend, ReductionsWithRunTimeChecksKeepAThreadPerOutput) {
  // out[r] = sum_k table[idx[r * 64 + k]]: the gather is checked at run time, and a lane that
  // stopped there would leave its warp's shuffles short.
  testing::GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, 256);
  int r = g.Range(g.Index(256), 0);
  int table = g.Buffer(1, v1::DType::FLOAT32, 100);
  int idx = g.Buffer(2, v1::DType::INT32, 256 * 64);
  int k = g.Range(g.Index(64), 1, v1::RangeArg::REDUCE);
  int row = g.RowMajor(r, 64, k);
  int sum = g.Reduce(v1::Node::ADD, v1::DType::FLOAT32, g.Load(table, g.Load(idx, row)), {k});
  auto spec = RenderCuda(g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})}, "r_gather_sum"));
  UOPD_ASSERT_OK(spec);
  EXPECT_EQ(spec->guarded_accesses, 1);
  EXPECT_FALSE(WarpShared(*spec)) << spec->src;
}

TEST(CudaBackend, GroupReductionsMeetInSharedMemoryAfterABarrier) {
  // GROUP (and GROUPTOP) split a reduction across a block's threads: each keeps a partial sum,
  // writes it to shared memory, and after __syncthreads the group's first thread combines them.
  auto ast = DecodeKernelAst(testing::RowSumKernel(1024, 1024));
  UOPD_ASSERT_OK(ast);
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  for (OptOp op : {OptOp::kGroup, OptOp::kGroupTop}) {
    auto optimized = OptimizeKernel(*ast, OptTarget::Cuda("sm_80"),
                                    OptimizeRequest{OptMode::kOpts, {Opt{op, 0, 16}}});
    UOPD_ASSERT_OK(optimized);
    auto spec = CudaRenderer().Render(optimized->ast, "r_grouped");
    UOPD_ASSERT_OK(spec);
    EXPECT_NE(spec->src.find("__shared__"), std::string::npos) << spec->src;
    EXPECT_NE(spec->src.find("__syncthreads()"), std::string::npos) << spec->src;
    auto dims = spec->launch_dims({});
    UOPD_ASSERT_OK(dims);
    EXPECT_EQ(dims->global[0] * dims->local[0], 1024 * 16) << "16 threads per row";
    // ptxas's count: 256 float partials in shared memory.
    auto kernel = (*compiler)->Compile(*spec);
    UOPD_ASSERT_OK(kernel);
    ASSERT_TRUE(kernel->resources.has_value());
    EXPECT_EQ(kernel->resources->shared_bytes, 256 * 4);
    EXPECT_EQ(kernel->resources->spilled_bytes, 0);
  }
}

TEST(CudaBackend, TheHeuristicsSplitAColumnSumAcrossABlock) {
  // core/opt/column_split.h: 4,096 columns get 8 threads each, 32 neighbouring columns a warp.
  auto ast = DecodeKernelAst(testing::ColumnSumKernel(4096, 4096));
  UOPD_ASSERT_OK(ast);
  auto chosen =
      OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), OptimizeRequest{OptMode::kHeuristic, {}});
  UOPD_ASSERT_OK(chosen);
  EXPECT_EQ(OptsToString(chosen->applied), "LOCAL(0, 32) GROUP(0, 8)");
  auto spec = CudaRenderer().Render(chosen->ast, "r_columns");
  UOPD_ASSERT_OK(spec);
  EXPECT_NE(spec->src.find("__syncthreads()"), std::string::npos) << spec->src;
  auto dims = spec->launch_dims({});
  UOPD_ASSERT_OK(dims);
  EXPECT_EQ(dims->global[0] * dims->local[0], 4096 * 8);
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  auto kernel = (*compiler)->Compile(*spec);
  UOPD_ASSERT_OK(kernel);
  std::atomic<int> registers{0};
  EXPECT_EQ(ResourcesProblem(*kernel, registers), "");
  EXPECT_EQ(kernel->resources->shared_bytes, 256 * 4);
}

// A matmul of `in` inputs into `acc` with tinygrad's TC opt (use_tensor_cores 1, core
// `select` of the architecture's list) and the heuristic's opts after it, spelled and compiled
// for `arch`.
void ExpectTensorCoreMatmulCompiles(v1::DType::Scalar in, v1::DType::Scalar acc, int select,
                                    const std::string& instruction,
                                    const std::string& arch = "sm_80") {
  auto ast = DecodeKernelAst(testing::Matmul(64, 64, 64, in, acc));
  UOPD_ASSERT_OK(ast);
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {select, 0, 1};
  OptTarget target = OptTarget::Cuda(arch);
  target.allow_tf32 = true;
  auto chosen = OptimizeKernel(
      *ast, target,
      {OptMode::kOpts,
       {tc, Opt{OptOp::kUpcast, 0, 4}, Opt{OptOp::kUpcast, 0, 4}, Opt{OptOp::kLocal, 0, 2}}});
  UOPD_ASSERT_OK(chosen);
  auto spec = CudaRenderer().Render(chosen->ast, "r_tensor_cores");
  UOPD_ASSERT_OK(spec);
  // One instruction per 16 x 8 tile and 16 values of K, 4 x 4 tiles a thread: no element is
  // written out as the CPU's oracle does.
  EXPECT_NE(spec->src.find(instruction), std::string::npos) << spec->src;
  EXPECT_EQ(spec->src.find("uopd_lane"), std::string::npos) << "warps must not share reductions";
  auto compiler = NvrtcCompiler::Create(arch);
  UOPD_ASSERT_OK(compiler);
  auto kernel = (*compiler)->Compile(*spec);
  UOPD_ASSERT_OK(kernel) << spec->src;
  std::atomic<int> registers{0};
  EXPECT_EQ(ResourcesProblem(*kernel, registers), "");
  EXPECT_NE(kernel->ptx.find("mma.sync.aligned"), std::string::npos);
}

TEST(CudaBackend, ATensorCoreReductionAccumulatesInsideTheInstruction) {
  // K = 64 is four m16n8k16 steps: each takes the reduction's accumulators as its C and writes
  // D back (kWmmaInto), with no extract and no addition of its result left beside it.
  auto ast = DecodeKernelAst(testing::Matmul(64, 64, 64, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(ast);
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {-1, 0, 1};
  auto chosen = OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), {OptMode::kOpts, {tc}});
  UOPD_ASSERT_OK(chosen);
  auto lowered = LowerForTarget(chosen->ast, "k", CodegenTarget::CudaGrid(), {});
  UOPD_ASSERT_OK(lowered);
  int into = 0, wmma = 0, extracts = 0, updates = 0;
  for (const Instr& in : lowered->program.instrs) {
    into += in.kind == InstrKind::kWmmaInto;
    wmma += in.kind == InstrKind::kWmma;
    // Of the instruction's result (a fragment's fused loads have extracts of their own).
    extracts += in.kind == InstrKind::kExtract &&
                lowered->program.instrs[in.src[0]].kind != InstrKind::kLoad;
    updates += in.kind == InstrKind::kAccUpdate;
  }
  EXPECT_EQ(into, 1) << lowered->program.Dump();
  EXPECT_EQ(wmma + extracts + updates, 0) << lowered->program.Dump();
}

TEST(CudaBackend, WarpsShareNoReductionBesideAFoldedTensorCore) {
  // out[i, j] = sum_k a[i, k] b[k, j] + sum_l c[i, l]: the matmul's steps accumulate inside the
  // instruction (kWmmaInto), and the row sum beside them must stay each thread's own: warps
  // sharing it would take one thread per warp, and mma.sync needs all 32.
  using v1::DType;
  using v1::Node;
  testing::GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 64 * 64);
  int i = g.Range(g.Index(64), 0);
  int j = g.Range(g.Index(64), 1);
  int k = g.Range(g.Index(64), 2, v1::RangeArg::REDUCE);
  int l = g.Range(g.Index(4096), 3, v1::RangeArg::REDUCE);
  int product = g.Node(Node::MUL, DType::FLOAT16,
                       {g.Load(g.Buffer(1, DType::FLOAT16, 64 * 64), g.RowMajor(i, 64, k)),
                        g.Load(g.Buffer(2, DType::FLOAT16, 64 * 64), g.RowMajor(k, 64, j))});
  int matmul =
      g.Reduce(Node::ADD, DType::FLOAT32, g.Node(Node::CAST, DType::FLOAT32, {product}), {k});
  int rows = g.Reduce(Node::ADD, DType::FLOAT32,
                      g.Load(g.Buffer(3, DType::FLOAT32, 64 * 4096), g.RowMajor(i, 4096, l)), {l});
  auto ast =
      DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, g.RowMajor(i, 64, j)),
                                            g.Node(Node::ADD, DType::FLOAT32, {matmul, rows})),
                                    {i, j})}));
  UOPD_ASSERT_OK(ast);
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {-1, 0, 1};
  auto chosen = OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), {OptMode::kOpts, {tc}});
  UOPD_ASSERT_OK(chosen);
  auto lowered = LowerForTarget(chosen->ast, "k", CodegenTarget::CudaGrid(), {});
  UOPD_ASSERT_OK(lowered);
  int into = 0;
  for (const Instr& in : lowered->program.instrs) into += in.kind == InstrKind::kWmmaInto;
  EXPECT_GT(into, 0) << lowered->program.Dump();
  EXPECT_FALSE(lowered->warps.enabled);
}

TEST(CudaBackend, ATensorCoreOptSpellsTheMmaInstructionAndCompiles) {
  ExpectTensorCoreMatmulCompiles(v1::DType::FLOAT16, v1::DType::FLOAT32, -1,
                                 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
  ExpectTensorCoreMatmulCompiles(v1::DType::BFLOAT16, v1::DType::FLOAT32, -1,
                                 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
  ExpectTensorCoreMatmulCompiles(v1::DType::FLOAT16, v1::DType::FLOAT16, -1,
                                 "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16");
  ExpectTensorCoreMatmulCompiles(v1::DType::FLOAT16, v1::DType::FLOAT32, 3,
                                 "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32");
  ExpectTensorCoreMatmulCompiles(v1::DType::FLOAT32, v1::DType::FLOAT32, -1,
                                 "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
  // sm_89 and later: fp8 inputs, K = 32.
  ExpectTensorCoreMatmulCompiles(v1::DType::FP8E4M3, v1::DType::FLOAT32, -1,
                                 "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_89");
}

TEST(CudaBackend, TensorCoresWithPaddingAndSearchDrawnOptsCompile) {
  // 33 x 17 x 9 pads every axis: its masked fragment loads are proven in bounds through their
  // masks (core/codegen/access_bounds.h), so no thread can stop before the instruction and
  // the whole warp runs it.
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  const OptTarget target = OptTarget::Cuda("sm_80");
  int lists = 0;
  for (auto [m, k, n] : {std::tuple{40, 24, 24}, std::tuple{33, 17, 9}}) {
    auto ast = DecodeKernelAst(testing::Matmul(m, k, n, v1::DType::FLOAT16, v1::DType::FLOAT32));
    UOPD_ASSERT_OK(ast);
    for (const std::vector<Opt>& opts : testing::TensorCoreOptLists(*ast, target, 3, 2)) {
      SCOPED_TRACE(absl::StrCat(m, "x", k, "x", n, " ", OptsToString(opts)));
      auto chosen = OptimizeKernel(*ast, target, {OptMode::kOpts, opts});
      UOPD_ASSERT_OK(chosen);
      auto spec = CudaRenderer().Render(chosen->ast, "r_padded");
      UOPD_ASSERT_OK(spec);
      EXPECT_NE(spec->src.find("uopd_mma_m16n8k16"), std::string::npos) << spec->src;
      EXPECT_EQ(spec->src.find("uopd_fail(uopd_status"), std::string::npos) << spec->src;
      auto kernel = (*compiler)->Compile(*spec);
      UOPD_ASSERT_OK(kernel) << spec->src;
      std::atomic<int> registers{0};
      EXPECT_EQ(ResourcesProblem(*kernel, registers), "");
      ++lists;
    }
  }
  EXPECT_GE(lists, 6);
}

TEST(CudaBackend, ATensorCoresFragmentsReadNeighbouringElementsInOneLoad) {
  // Each thread's A fragment (m16n8k16) holds pairs of neighbouring K elements of a row: each
  // pair is one 4-byte load (ld.global.v2.u16) where aligned. B's pairs are a row apart.
  auto ast = DecodeKernelAst(testing::Matmul(64, 64, 64, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(ast);
  auto chosen =
      OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), OptimizeRequest{OptMode::kHeuristic, {}});
  UOPD_ASSERT_OK(chosen);
  auto spec = CudaRenderer().Render(chosen->ast, "r_fragments");
  UOPD_ASSERT_OK(spec);
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  auto kernel = (*compiler)->Compile(*spec);
  UOPD_ASSERT_OK(kernel);
  int pairs = 0;
  for (size_t at = kernel->ptx.find("ld.global.v2.u16"); at != std::string::npos;
       at = kernel->ptx.find("ld.global.v2.u16", at + 1)) {
    ++pairs;
  }
  // The K loop's body: 4 A fragments of 4 pairs each (every one a 4-byte load).
  EXPECT_EQ(pairs, 4 * 4) << kernel->ptx;
}

TEST(CudaBackend, AMatmulsUnrolledKReadsBothOperandsAsFloat4) {
  // tinygrad's opts: B's columns are upcast (a float4 along N), K is unrolled by 4 (A's four
  // neighbouring elements of a row, written out, read as one float4 all the same).
  auto ast = DecodeKernelAst(testing::Matmul(512, 512, 512));
  UOPD_ASSERT_OK(ast);
  auto chosen =
      OptimizeKernel(*ast, OptTarget::Cuda("sm_90"), OptimizeRequest{OptMode::kHeuristic, {}});
  UOPD_ASSERT_OK(chosen);
  EXPECT_NE(OptsToString(chosen->applied).find("UNROLL(0, 4)"), std::string::npos);
  auto spec = CudaRenderer().Render(chosen->ast, "r_matmul");
  UOPD_ASSERT_OK(spec);
  for (const char* operand : {"&data1[", "&data2["}) {
    EXPECT_NE(spec->src.find(absl::StrCat("*(const uint4*)((const char*)", operand)),
              std::string::npos)
        << operand << "\n"
        << spec->src;
  }
}

TEST(CudaBackend, ATensorCoreWhoseWarpIsNotTheGridsLanesIsWrittenOut) {
  // Two statements: the kernel runs as one thread (no grid), its warp a loop in it, where
  // mma.sync would run with one lane; the instruction is written out instead.
  auto ast = DecodeKernelAst(
      testing::Matmul(32, 32, 16, v1::DType::FLOAT16, v1::DType::FLOAT32, {.second_output = true}));
  UOPD_ASSERT_OK(ast);
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {-1, 0, 1};
  auto chosen = OptimizeKernel(*ast, OptTarget::Cuda("sm_80"), {OptMode::kOpts, {tc}});
  UOPD_ASSERT_OK(chosen);
  auto spec = CudaRenderer().Render(chosen->ast, "r_one_thread");
  UOPD_ASSERT_OK(spec);
  EXPECT_EQ(spec->src.find("mma.sync"), std::string::npos) << spec->src;
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  UOPD_EXPECT_OK((*compiler)->Compile(*spec));
}

TEST(CudaBackend, ASearchRecordWithTensorCoresIsNotReadWithThemOff) {
  // A cluster's cache may hold the choice of a search that ran with tensor cores; a daemon
  // started with --tensor_cores=false must not apply it (its compiles would fail).
  auto ast = DecodeKernelAst(testing::Matmul(64, 64, 64, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(ast);
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  CompilerPair pair{std::make_unique<CudaRenderer>(), std::move(*compiler)};
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  KernelCache cache(std::move(tiers));
  CachingProgramSource source(cache);
  Opt tc{OptOp::kTc, 0, 0};
  tc.tc = {-1, 0, 1};
  const CacheKey key = KeyFor("CUDA", pair, (*ast)->hash, "search");
  auto stored = cache.GetOrCompile(key, [&]() -> absl::StatusOr<CacheEntry> {
    CacheEntry record;
    record.key = key.Hex();
    record.ast_hash = (*ast)->hash;
    record.tuned_opts = {tc, Opt{OptOp::kUpcast, 0, 4}};
    record.search.converged = true;
    return record;
  });
  UOPD_ASSERT_OK(stored);
  auto found = source.optimizer().FindSearchRecord("CUDA", pair, **ast);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(OptsToString(*found), "TC(0, (-1, 0, 1)) UPCAST(0, 4)");
  SetTensorCoresEnabled(false);
  EXPECT_FALSE(source.optimizer().FindSearchRecord("CUDA", pair, **ast).has_value());
  SetTensorCoresEnabled(true);
}

TEST(CudaBackend, PtxasReportsReadTheEntrysLines) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_80'\n"
      "ptxas info    : Function properties for other\n"
      "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 255 registers, 0 bytes smem, 372 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
      "ptxas info    : Function properties for k\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 18 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]\n";
  auto k = ParsePtxasReport(log, "k");
  UOPD_ASSERT_OK(k);
  EXPECT_EQ(k->registers, 18);
  EXPECT_EQ(k->shared_bytes, 1024);
  EXPECT_EQ(k->spilled_bytes, 0);
  auto other = ParsePtxasReport(log, "other");
  UOPD_ASSERT_OK(other);
  EXPECT_EQ(other->registers, 255);
  EXPECT_EQ(other->spilled_bytes, 4);
  EXPECT_EQ(ParsePtxasReport(log, "missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(CudaBackend, WarpsShareSymbolicRowReductions) {
  // out[r] = max_k in[r * 1024 + k] for k < n: the trip count is known only at run time.
  testing::GraphBuilder g;
  int out = g.Buffer(0, v1::DType::INT32, 128);
  int r = g.Range(g.Index(128), 0);
  int in = g.Buffer(1, v1::DType::INT32, 128 * 1024);
  int k = g.Range(g.Var("n", 1, 1024), 1, v1::RangeArg::REDUCE);
  int row = g.RowMajor(r, 1024, k);
  int neg = g.Node(v1::Node::NEG, v1::DType::INT32, {g.Load(in, row)});
  int max = g.Reduce(v1::Node::MAX, v1::DType::INT32, neg, {k});
  auto spec = RenderCuda(g.Sink({g.End(g.Store(g.Target(out, r), max), {r})}, "r_max_n"));
  UOPD_ASSERT_OK(spec);
  EXPECT_TRUE(WarpShared(*spec)) << spec->src;
  // Integer MAX avoids the ptxas VIMNMX3 fusion that drops negated operands.
  EXPECT_NE(spec->src.find("uopd_imax<int>("), std::string::npos) << spec->src;
}

TEST(CudaBackend, AMultiplyThenAnAddIsNeverFused) {
  // The IR rounds a*b, then +c (docs/IR.md), as the CPU backend does: NVRTC must not contract
  // them into one FMA (its default), or the GPU's answers would differ in the last bit.
  testing::GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, 64);
  int i = g.Range(g.Index(64), 0);
  int a = g.Load(g.Buffer(1, v1::DType::FLOAT32, 64), i);
  int b = g.Load(g.Buffer(2, v1::DType::FLOAT32, 64), i);
  int c = g.Load(g.Buffer(3, v1::DType::FLOAT32, 64), i);
  int product = g.Node(v1::Node::MUL, v1::DType::FLOAT32, {a, b});
  int sum = g.Node(v1::Node::ADD, v1::DType::FLOAT32, {product, c});
  int mulacc = g.Node(v1::Node::MULACC, v1::DType::FLOAT32, {a, b, sum});
  auto spec = RenderCuda(g.Sink({g.End(g.Store(g.Target(out, i), mulacc), {i})}, "fma_probe"));
  UOPD_ASSERT_OK(spec);
  auto compiler = NvrtcCompiler::Create("sm_90");
  UOPD_ASSERT_OK(compiler);
  auto kernel = (*compiler)->Compile(*spec);
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->ptx.find("fma."), std::string::npos) << kernel->ptx;
  EXPECT_NE(kernel->ptx.find("mul.rn.f32"), std::string::npos) << kernel->ptx;
}

TEST(CudaBackend, AMultiplyThenAnAddIsFusedWhereTheRequestAllowsIt) {
  // As NVCC's default contraction does for tinygrad's own CUDA kernels; NVRTC itself still runs
  // with --fmad=false, so the fusions are exactly FuseMultiplyAdds's.
  testing::GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, 64);
  int i = g.Range(g.Index(64), 0);
  int a = g.Load(g.Buffer(1, v1::DType::FLOAT32, 64), i);
  int b = g.Load(g.Buffer(2, v1::DType::FLOAT32, 64), i);
  int c = g.Load(g.Buffer(3, v1::DType::FLOAT32, 64), i);
  int sum = g.Node(v1::Node::ADD, v1::DType::FLOAT32,
                   {g.Node(v1::Node::MUL, v1::DType::FLOAT32, {a, b}), c});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), sum), {i})}, "fma_probe"));
  UOPD_ASSERT_OK(ast);
  RenderOptions fma;
  fma.allow_fma = true;
  auto spec = CudaRenderer().Render(*ast, "fma_probe", fma);
  UOPD_ASSERT_OK(spec);
  EXPECT_NE(spec->src.find("fmaf("), std::string::npos) << spec->src;
  auto compiler = NvrtcCompiler::Create("sm_90");
  UOPD_ASSERT_OK(compiler);
  auto kernel = (*compiler)->Compile(*spec);
  UOPD_ASSERT_OK(kernel);
  EXPECT_NE(kernel->ptx.find("fma.rn.f32"), std::string::npos) << kernel->ptx;
  auto plain = CudaRenderer().Render(*ast, "fma_probe");
  UOPD_ASSERT_OK(plain);
  EXPECT_EQ(plain->src.find("fmaf("), std::string::npos) << plain->src;
}

// `kernel` with `opts` applied for sm_80, spelled for CUDA.
absl::StatusOr<ProgramSpec> RenderCudaWithOpts(const v1::Graph& kernel,
                                               const std::vector<Opt>& opts) {
  UOPD_ASSIGN_OR_RETURN(auto ast, DecodeKernelAst(kernel));
  UOPD_ASSIGN_OR_RETURN(auto chosen,
                        OptimizeKernel(ast, OptTarget::Cuda("sm_80"), {OptMode::kOpts, opts}));
  return CudaRenderer().Render(chosen.ast, ast->DefaultName());
}

TEST(CudaBackend, ContiguousUpcastsMoveSixteenBytesAThread) {
  // tinygrad's float4: an UPCAST along contiguous memory loads and stores each thread's four
  // floats in one instruction, where the address is aligned (else one element at a time).
  auto spec = RenderCudaWithOpts(testing::AddKernel(4096), {Opt{OptOp::kUpcast, 0, 4}});
  UOPD_ASSERT_OK(spec);
  EXPECT_NE(spec->src.find("& 15ULL"), std::string::npos) << "no alignment test:\n" << spec->src;
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  auto kernel = (*compiler)->Compile(*spec);
  UOPD_ASSERT_OK(kernel) << spec->src;
  auto count = [&](const std::string& what) {
    int n = 0;
    for (size_t at = kernel->ptx.find(what); at != std::string::npos;
         at = kernel->ptx.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count(".v4."), 3) << "two 16-byte loads and a 16-byte store:\n" << kernel->ptx;
  std::atomic<int> registers{0};
  EXPECT_EQ(ResourcesProblem(*kernel, registers), "");
  // Written out: lanes that stop at the buffer's end one by one.
  auto padded = RenderCudaWithOpts(testing::AddKernel(4094),
                                   {Opt{OptOp::kPadTo, 0, 4}, Opt{OptOp::kUpcast, 0, 4}});
  UOPD_ASSERT_OK(padded);
  EXPECT_EQ(padded->src.find("uint4"), std::string::npos) << padded->src;
}

TEST(CudaBackend, AVectorCopyFromABufferOfNoElementsCompiles) {
  // Legalize reads a buffer of no elements as 0 (its bounds check fails first): a vector
  // constant for the float4 store, once spelled as a scalar literal indexed by lane.
  testing::GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, 8);
  int x = g.Buffer(1, v1::DType::FLOAT32, 0);
  int i = g.Range(g.Index(8), 0);
  auto wire = g.Sink({g.End(g.Store(g.Target(out, i), g.Load(x, i)), {i})}, "empty_copy");
  auto spec = RenderCudaWithOpts(wire, {Opt{OptOp::kUpcast, 0, 4}});
  UOPD_ASSERT_OK(spec);
  auto compiler = NvrtcCompiler::Create("sm_80");
  UOPD_ASSERT_OK(compiler);
  UOPD_ASSERT_OK((*compiler)->Compile(*spec)) << spec->src;
}

TEST(CudaBackend, SymbolicLaunchSizesFollowTheVariables) {
  auto entry = LoadCorpusFile(testing::CorpusDir() + "/cases/sym_two_vars_i4_j1.json");
  UOPD_ASSERT_OK(entry);
  auto ast = DecodeKernelAst(entry->kase.ast());
  UOPD_ASSERT_OK(ast);
  auto spec = CudaRenderer().Render(*ast, "sym");
  UOPD_ASSERT_OK(spec);
  // (i + j) * 3 threads in blocks of 256.
  auto small = spec->launch_dims({{"i", 4}, {"j", 1}});
  UOPD_ASSERT_OK(small);
  EXPECT_EQ(small->global[0], 1);
  auto refused = spec->launch_dims({{"i", 11}, {"j", 1}});
  EXPECT_TRUE(testing::StatusIs(refused, absl::StatusCode::kInvalidArgument, {"'i' = 11"}));
}

TEST(CudaBackend, RejectsTargetsNvrtcCannotCompileFor) {
  EXPECT_TRUE(testing::StatusIs(NvrtcCompiler::Create("sm_9x"), absl::StatusCode::kInvalidArgument,
                                {"sm_9x"}));
  EXPECT_TRUE(
      testing::StatusIs(NvrtcCompiler::Create("compute_90"), absl::StatusCode::kInvalidArgument));
}

TEST(CudaBackend, RandomKernelsCompileWithNvrtc) {
  auto compiler = NvrtcCompiler::Create("sm_90");
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  CudaRenderer renderer;
  const uint32_t kernels = testing::RandomKernelCount(40);
  for (bool long_reductions : {false, true}) {
    for (uint32_t seed = 0; seed < kernels; ++seed) {
      testing::Generator generator(seed, long_reductions);
      std::vector<testing::RandomInput> inputs;
      testing::S out_dtype;
      auto ast = DecodeKernelAst(generator.Make(&inputs, &out_dtype));
      ASSERT_TRUE(ast.ok()) << "seed " << seed << ": " << ast.status();
      auto spec = renderer.Render(*ast, "random");
      ASSERT_TRUE(spec.ok()) << "seed " << seed << ": " << spec.status();
      auto kernel = (*compiler)->Compile(*spec);
      EXPECT_TRUE(kernel.ok()) << "seed " << seed << (long_reductions ? " (long)" : "") << ": "
                               << kernel.status();
    }
  }
}

}  // namespace
}  // namespace uopd
