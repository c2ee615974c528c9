// The CUDA backend: every corpus kernel renders to CUDA C and compiles with NVRTC for sm_90 and
// sm_80 on this machine, GPU or not; on a machine with a GPU, every corpus case and plan also
// runs on CUDA:0 and matches tinygrad.
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_renderer.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "core/cache/caching_program_source.h"
#include "core/corpus/corpus_runner.h"
#include "core/util/thread_pool.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/random_kernels.h"
#include "tests/testing/status_matchers.h"

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

TEST(CudaBackend, EveryCorpusKernelCompilesForSm90AndSm80WithoutAGpu) {
  auto asts = testing::CorpusAsts();
  ASSERT_GT(asts.size(), 300u);
  CudaRenderer renderer;
  std::vector<std::unique_ptr<NvrtcCompiler>> compilers;
  for (const char* arch : {"sm_90", "sm_80"}) {
    auto compiler = NvrtcCompiler::Create(arch);
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    compilers.push_back(*std::move(compiler));
  }
  std::mutex mu;
  std::vector<std::string> failures;
  std::atomic<int> compiled{0};
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()) - 1);
  pool.ParallelFor(static_cast<int>(asts.size()), [&](int i) {
    const auto& [label, wire] = asts[i];
    auto fail = [&](const std::string& why) {
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back(absl::StrCat(label, ": ", why));
    };
    auto ast = DecodeKernelAst(wire);
    if (!ast.ok()) return fail(ast.status().ToString());
    auto spec = renderer.Render(*ast, (*ast)->DefaultName());
    if (!spec.ok()) return fail(spec.status().ToString());
    const int expected_params = spec->buf_count + static_cast<int>(spec->var_names.size()) + 1;
    for (const auto& compiler : compilers) {
      auto kernel = compiler->Compile(*spec);
      if (!kernel.ok()) return fail(kernel.status().ToString());
      if (kernel->bytes.size() < 4 || kernel->bytes.compare(0, 4,
                                                            "\x7f"
                                                            "ELF") != 0) {
        return fail(absl::StrCat(compiler->Target(), ": the CUBIN is not an ELF image"));
      }
      int params = EntryParams(kernel->ptx, spec->name);
      if (params != expected_params) {
        return fail(absl::StrCat(compiler->Target(), ": PTX entry ", spec->name, " has ", params,
                                 " parameters, expected ", expected_params));
      }
      compiled.fetch_add(1);
    }
  });
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
  EXPECT_EQ(compiled.load(), static_cast<int>(2 * asts.size()));
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
  EXPECT_EQ(dims->local[0], kCudaBlockSize);
  EXPECT_NE(spec->src.find("blockIdx.x"), std::string::npos) << spec->src;
  EXPECT_NE(spec->src.find("for ("), std::string::npos) << "the reduction stays a loop:\n"
                                                        << spec->src;
  EXPECT_TRUE(spec->var_names.empty()) << "GPU kernels take no core variables";
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
  const char* count = std::getenv("UOPD_RANDOM_KERNELS");  // more for a longer hunt
  const uint32_t kernels = count != nullptr ? static_cast<uint32_t>(std::atoi(count)) : 40;
  for (uint32_t seed = 0; seed < kernels; ++seed) {
    testing::Generator generator(seed);
    std::vector<std::pair<testing::S, int>> inputs;
    testing::S out_dtype;
    auto ast = DecodeKernelAst(generator.Make(&inputs, &out_dtype));
    ASSERT_TRUE(ast.ok()) << "seed " << seed << ": " << ast.status();
    auto spec = renderer.Render(*ast, "random");
    ASSERT_TRUE(spec.ok()) << "seed " << seed << ": " << spec.status();
    auto kernel = (*compiler)->Compile(*spec);
    EXPECT_TRUE(kernel.ok()) << "seed " << seed << ": " << kernel.status();
  }
}

TEST(CudaBackend, RunsTheCorpusOnTheGpu) {
  auto devices = CreateCudaDevices();
  if (!devices.ok()) {
    GTEST_SKIP() << "no GPU here (" << devices.status().message() << "): GPU execution not tested";
  }
  Device& gpu = *devices->front();
  KernelCache cache;
  CachingProgramSource source(cache);
  ThreadPool pool(3);
  int passed = 0;
  for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
    absl::Status status = RunCorpusEntry(gpu, entry, {&source, &pool});
    EXPECT_TRUE(status.ok()) << entry.path << ": " << status;
    passed += status.ok();
  }
  EXPECT_GT(passed, 380);
}

}  // namespace
}  // namespace uopd
