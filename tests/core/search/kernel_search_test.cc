// The search optimization mode on the CPU: what it finds is valid, verified and no slower than
// the heuristics; it keeps to its budget and to the caller's deadline; its choice is recorded
// in the compiled-byte cache, where every worker sharing the cache finds it.
#include "core/search/kernel_search.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "backends/cpu/cpu_device.h"
#include "core/cache/memory_tier.h"
#include "core/opt/optimize.h"
#include "core/program/caching_program_source.h"
#include "core/search/made_up_inputs.h"
#include "core/util/kernel_support.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_opts.h"
#include "tests/testing/fake_device.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::HostBuffer;

class KernelSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(&pool_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
    auto ast = DecodeKernelAst(testing::Matmul(kM, kK, kN));
    ASSERT_TRUE(ast.ok()) << ast.status();
    matmul_ = *ast;
  }
  OptTarget Target() const {
    return OptTargetFor("CPU", device_->compiler().Target(), device_->threads());
  }
  static double Seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  }

  static constexpr int64_t kM = 64, kK = 48, kN = 64;
  ThreadPool pool_{1};
  std::unique_ptr<Device> device_;
  std::shared_ptr<const KernelAst> matmul_;
};

TEST_F(KernelSearchTest, FindsValidOptsNoSlowerThanTheHeuristicsThatComputeTheSame) {
  SearchOptions options;
  options.budget = absl::Seconds(3);
  auto found = SearchKernelOpts(*device_, matmul_, options);
  UOPD_ASSERT_OK(found);
  EXPECT_GT(found->candidates, 2);
  EXPECT_GT(found->heuristic_seconds, 0);
  EXPECT_LE(found->seconds, found->heuristic_seconds);
  // The opts apply, and the kernel they make computes the matmul.
  auto optimized = OptimizeKernel(matmul_, Target(), OptimizeRequest{OptMode::kOpts, found->opts});
  UOPD_ASSERT_OK(optimized);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> a(kM * kK), b(kK * kN);
  for (float& x : a) x = value(rng);
  for (float& x : b) x = value(rng);
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(kM * kN)), HostBuffer::Of(a),
                                     HostBuffer::Of(b)};
  UOPD_ASSERT_OK(testing::RunAstOn(*device_, optimized->ast, buffers));
  std::vector<float> out = buffers[0].As<float>();
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      double want = 0;
      for (int64_t r = 0; r < kK; ++r) want += double{a[i * kK + r]} * b[r * kN + j];
      ASSERT_NEAR(out[i * kN + j], want, 1e-4)
          << i << ", " << j << " with " << OptsToString(found->opts);
    }
  }
}

TEST_F(KernelSearchTest, AGatherWhoseMadeUpIndicesLeaveItsTableGetsTheHeuristics) {
  // The made-up index data points past the table: the kernel as written stops at its bounds
  // check, which says nothing of the client's data (the compile failed with OUT_OF_RANGE).
  auto gather = DecodeKernelAst(testing::GatherKernel());
  UOPD_ASSERT_OK(gather);
  SearchOptions options;
  options.budget = absl::Seconds(1);
  auto found = SearchKernelOpts(*device_, *gather, options);
  UOPD_ASSERT_OK(found);
  EXPECT_NE(found->note.find("made-up inputs"), std::string::npos) << found->note;
  UOPD_ASSERT_OK(OptimizeKernel(*gather, Target(), OptimizeRequest{OptMode::kOpts, found->opts}));
}

TEST_F(KernelSearchTest, KeepsToItsBudgetAndToTheCallersDeadline) {
  SearchOptions options;
  options.budget = absl::Milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto found = SearchKernelOpts(*device_, matmul_, options);
  UOPD_ASSERT_OK(found);
  EXPECT_LT(Seconds(start), 2.0);  // one candidate may finish past the budget
  EXPECT_FALSE(found->stopped);

  // A call with 600 ms left searches for half of it, whatever the budget.
  StopFlag call;
  call.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(600));
  options.budget = absl::Seconds(60);
  options.stop = &call;
  start = std::chrono::steady_clock::now();
  found = SearchKernelOpts(*device_, matmul_, options);
  UOPD_ASSERT_OK(found);
  EXPECT_LT(Seconds(start), 2.0);
  EXPECT_FALSE(found->converged && Seconds(start) > 1.0);

  // A call already over: the search ends at once, saying so.
  StopFlag over;
  over.Stop();
  options.stop = &over;
  found = SearchKernelOpts(*device_, matmul_, options);
  if (found.ok()) {
    EXPECT_TRUE(found->stopped);
  }
}

TEST_F(KernelSearchTest, TheChoiceIsRecordedInTheCacheForEveryWorkerSharingIt) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache shared(std::move(tiers));
  SearchOptions options;
  options.budget = absl::Seconds(2);
  CachingProgramSource first(shared, 16, OptMode::kHeuristic, options);
  OptimizeRequest search{OptMode::kSearch, {}};
  auto searched = first.Get(*device_, matmul_, search, nullptr);
  UOPD_ASSERT_OK(searched);
  const int64_t compilations = shared.compile_stats()["CPU"].compilations;

  // Another worker (its own program source, the same cache): the record, no second search.
  CachingProgramSource second(shared, 16, OptMode::kSearch, options);
  auto start = std::chrono::steady_clock::now();
  auto found = second.Get(*device_, matmul_, OptimizeRequest{}, nullptr);  // its default
  UOPD_ASSERT_OK(found);
  EXPECT_LT(Seconds(start), 1.0);
  EXPECT_EQ(OptsToString((*found)->applied), OptsToString((*searched)->applied));
  EXPECT_EQ((*found)->key_hex, (*searched)->key_hex);
  EXPECT_EQ(shared.compile_stats()["CPU"].compilations, compilations);

  // Compiling for the target without a device finds the record too.
  auto compiled = second.Compile("CPU", device_->compilers().front(), matmul_, search);
  UOPD_ASSERT_OK(compiled);
  EXPECT_EQ(OptsToString(compiled->applied), OptsToString((*searched)->applied));
}

// When the heuristics time close candidates (ResolveHeuristic), the winner as compiled for the
// timing is kept under its compile key: the compile that follows is a hit, not the same program
// compiled again (a third of a timed kernel's first-run cost; ResNet-18's first run 11.0 -> 7.6 s).
TEST_F(KernelSearchTest, TheTimedWinnerIsNotCompiledAgain) {
  // A model kernel whose candidates are timed: the smallest such convolution of the three models.
  std::ifstream in(std::string(UOPD_CORPUS_OPT_DIR) + "/heuristic_models.jsonl");
  ASSERT_TRUE(in.is_open());
  std::shared_ptr<const KernelAst> timed;
  int64_t timed_nodes = 0;
  for (std::string text; std::getline(in, text);) {
    google::protobuf::Struct line;
    if (text.empty() || !google::protobuf::util::JsonStringToMessage(text, &line).ok()) continue;
    auto wire = testing::MessageOf<v1::Graph>(line.fields().at("ast_scheduled"));
    UOPD_ASSERT_OK(wire);
    auto ast = DecodeKernelAst(*wire);
    UOPD_ASSERT_OK(ast);
    const int64_t nodes = static_cast<int64_t>(Toposort((*ast)->root).size());
    if ((timed == nullptr || nodes < timed_nodes) &&
        HeuristicContendersFor(*ast, Target()).size() >= 2) {
      timed = *ast;
      timed_nodes = nodes;
    }
  }
  ASSERT_NE(timed, nullptr) << "no model kernel has its candidates timed";
  const std::shared_ptr<const KernelAst>* big = &timed;
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache shared(std::move(tiers));
  CachingProgramSource source(shared, 16);
  auto chosen = source.optimizer().ResolveHeuristic(*device_, *big, nullptr);
  UOPD_ASSERT_OK(chosen);
  EXPECT_EQ(chosen->mode, OptMode::kOpts);
  auto compiled = source.Compile(*device_, *big, OptimizeRequest{OptMode::kHeuristic, {}});
  UOPD_ASSERT_OK(compiled);
  EXPECT_EQ(OptsToString(compiled->applied), OptsToString(chosen->opts));
  EXPECT_EQ(compiled->lookup.answered_by, "memory");
}

TEST_F(KernelSearchTest, ASearchTheCallEndsIsNotRecorded) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache shared(std::move(tiers));
  CachingProgramSource source(shared, 16);
  StopFlag over;
  over.Stop();
  auto result = source.Get(*device_, matmul_, OptimizeRequest{OptMode::kSearch, {}}, &over);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_FALSE(source.optimizer()
                   .FindSearchRecord("CPU", device_->compilers().front(), *matmul_)
                   .has_value());
}

// Whether `spec`'s kernel has an UPCAST range: the lowering the fake backend below gets wrong.
bool Upcast(const ProgramSpec& spec) {
  for (const UOp* node : Toposort(spec.ast->root)) {
    if (node->op() == Op::kRange && node->arg().axis_type == AxisType::kUpcast) return true;
  }
  return false;
}

// A GPU's heuristics choose among lowerings no model has checked on that GPU: a tournament that
// verifies its candidates neither times nor chooses one whose outputs differ from the kernel as
// written's, and names it.
TEST(Tournament, AVerifiedCandidateWhoseOutputsDifferIsNeitherTimedNorChosen) {
  auto counters = std::make_shared<testing::FakeCounters>();
  counters->miscomputes = Upcast;
  std::unique_ptr<Device> device = testing::FakeDevice(counters);
  auto ast = DecodeKernelAst(testing::AddKernel(64));
  UOPD_ASSERT_OK(ast);
  const std::vector<std::vector<Opt>> candidates = {{Opt{OptOp::kUpcast, 0, 4}}, {}};
  SearchOptions options;
  options.verify_candidates = true;
  auto timed = TimeOptCandidates(*device, *ast, candidates, options);
  UOPD_ASSERT_OK(timed);
  EXPECT_EQ(timed->differed, std::vector<size_t>{0});
  EXPECT_TRUE(std::isinf(timed->seconds[0]));
  EXPECT_FALSE(std::isinf(timed->seconds[1]));
  EXPECT_EQ(timed->winner, 1u);
  // Unverified (the CPU's tournaments), both are timed.
  options.verify_candidates = false;
  timed = TimeOptCandidates(*device, *ast, candidates, options);
  UOPD_ASSERT_OK(timed);
  EXPECT_TRUE(timed->differed.empty());
  EXPECT_FALSE(std::isinf(timed->seconds[0]));
}

// When no candidate can run on the device, the timing learned nothing: the model's choice
// answers, and no record of it reaches the shared cache, where every worker would take it for a
// measurement.
TEST_F(KernelSearchTest, CandidatesThatCouldNotRunAreNotRecordedAsTimed) {
  auto counters = std::make_shared<testing::FakeCounters>();
  std::unique_ptr<Device> device = testing::FakeDevice(counters);
  auto ast = DecodeKernelAst(testing::Matmul(512, 512, 512));
  UOPD_ASSERT_OK(ast);
  const std::vector<std::vector<Opt>> contenders =
      HeuristicContendersFor(*ast, OptTargetFor("CPU", "fake-target", device->threads()));
  ASSERT_GE(contenders.size(), 2u) << "the matmul's candidates are not timed";
  counters->fail_compiles = true;
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache shared(std::move(tiers));
  CachingProgramSource source(shared, 16);
  auto chosen = source.optimizer().ResolveHeuristic(*device, *ast, nullptr);
  UOPD_ASSERT_OK(chosen);
  EXPECT_EQ(OptsToString(chosen->opts), OptsToString(contenders.front()));
  EXPECT_FALSE(source.optimizer()
                   .FindSearchRecord("CPU", device->compilers().front(), **ast, "heuristic")
                   .has_value());
}

// A tensor core multiplies a half matmul's operands exactly where the kernel as written rounds
// each product to half: on made-up values with every mantissa bit, a 1024-long sum differed by 9x
// the comparison's tolerance, and no tensor core candidate could pass a search or a verified
// tournament. The made-up values of every narrow float multiply exactly in their own type.
TEST(MadeUpInputs, ProductsOfNarrowFloatsAreExactInTheirType) {
  struct Format {
    Scalar scalar;
    float (*widen)(uint32_t);
    uint32_t (*narrow)(double);
  };
  for (const Format& f :
       {Format{Scalar::kFloat16, uopd_f16_to_f32, uopd_f64_to_f16},
        Format{Scalar::kBfloat16, uopd_bf16_to_f32, uopd_f64_to_bf16},
        Format{Scalar::kFp8E4M3, uopd_fp8e4m3_to_f32, uopd_f64_to_fp8e4m3},
        Format{Scalar::kFp8E5M2, uopd_fp8e5m2_to_f32, uopd_f64_to_fp8e5m2},
        Format{Scalar::kFp8E4M3Fnuz, uopd_fp8e4m3fnuz_to_f32, uopd_f64_to_fp8e4m3fnuz},
        Format{Scalar::kFp8E5M2Fnuz, uopd_fp8e5m2fnuz_to_f32, uopd_f64_to_fp8e5m2fnuz}}) {
    std::mt19937_64 rng(7);
    std::vector<double> values;
    for (int i = 0; i < 64; ++i) {
      uint32_t bits = 0;  // little-endian: the element's bytes are bits' low bytes
      FillMadeUpElement(f.scalar, rng, reinterpret_cast<char*>(&bits));
      values.push_back(f.widen(bits));
    }
    int inexact = 0;
    for (double a : values) {
      for (double b : values) inexact += f.widen(f.narrow(a * b)) != a * b;
    }
    EXPECT_EQ(inexact, 0) << "scalar " << static_cast<int>(f.scalar);
  }
}

}  // namespace
}  // namespace uopd
