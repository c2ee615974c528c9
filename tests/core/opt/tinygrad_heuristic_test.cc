// ApplyTinygradHeuristics against tinygrad itself: every case of the optimized corpus whose opts
// tinygrad's hand_coded_optimizations chose (tests/corpus_opt, "opts_source": "heuristic") must
// get exactly those opts, in order, from the case's pre-opt AST and target; and so must the
// kernels of three real models and of a few small programs (tests/corpus_opt/
// heuristic_models.jsonl), from the AST a client sends, through uopd's pre-optimization passes.
#include "core/opt/tinygrad_heuristic.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/corpus/corpus_file.h"
#include "core/opt/opt.h"
#include "core/opt/optimize.h"
#include "core/opt/preopt.h"
#include "core/wire/decode.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_opts.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::MessageOf;
using testing::OptOf;
using testing::TargetOf;

TEST(TinygradHeuristics, ChooseTinygradsOptsForEveryHeuristicCorpusCase) {
  auto files = ListCorpusFiles({std::string(UOPD_CORPUS_OPT_DIR) + "/cases"});
  UOPD_ASSERT_OK(files);
  int matched = 0, cpu = 0, cuda = 0, skipped_tc = 0;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    UOPD_ASSERT_OK(entry);
    const v1::CorpusCase& kase = entry->kase;
    if (kase.opts_source() != "heuristic") continue;
    SCOPED_TRACE(kase.name());
    std::vector<Opt> expected;
    for (const v1::CorpusOpt& wire : kase.opts()) {
      auto opt = OptOf(wire);
      UOPD_ASSERT_OK(opt);
      expected.push_back(*opt);
    }
    // tinygrad chose tensor cores, which uopd does not implement: its choice cannot be made.
    if (!expected.empty() && expected.front().op == OptOp::kTc) {
      ++skipped_tc;
      std::printf("[  NOTE    ] %s: skipped, tinygrad chose TC\n", kase.name().c_str());
      continue;
    }
    auto preopt = DecodeKernelAst(kase.ast_preopt());
    UOPD_ASSERT_OK(preopt);
    Scheduler scheduler(**preopt, TargetOf(kase));
    ApplyTinygradHeuristics(scheduler);
    EXPECT_EQ(OptsToString(scheduler.applied()), OptsToString(expected));
    if (scheduler.applied() == expected) {
      ++matched;
      (kase.target() == "CPU" ? cpu : cuda)++;
    }
  }
  std::printf(
      "[  NOTE    ] %d heuristic cases chose tinygrad's opts (%d CPU, %d CUDA), %d skipped (TC)\n",
      matched, cpu, cuda, skipped_tc);
  // 29 CPU and 10 CUDA heuristic cases, none of which picked tensor cores.
  EXPECT_EQ(matched + skipped_tc, 39);
}

// The opts tinygrad chose for a kernel and target: test data, so a malformed line fails the test.
std::vector<Opt> ExpectedOpts(const google::protobuf::Struct& line, const std::string& target) {
  std::vector<Opt> opts;
  for (const google::protobuf::Value& value :
       line.fields().at("opts").struct_value().fields().at(target).list_value().values()) {
    auto wire = MessageOf<v1::CorpusOpt>(value);
    EXPECT_TRUE(wire.ok()) << wire.status();
    if (!wire.ok()) continue;
    auto opt = OptOf(*wire);
    EXPECT_TRUE(opt.ok()) << opt.status();
    if (opt.ok()) opts.push_back(*opt);
  }
  return opts;
}

std::vector<Opt> TinygradHeuristicsOn(const KernelAst& ast, const OptTarget& target) {
  Scheduler scheduler(ast, target);
  ApplyTinygradHeuristics(scheduler);
  return scheduler.applied();
}

// Model kernels (bench/model_bench.py --export) and those of a few small programs, with
// tinygrad's choices for ClangJITRenderer with CPU_COUNT=2 and CUDARenderer("sm_80")
// (tests/corpus_opt/make_heuristic_models.py). Each goes through uopd's pre-optimization passes,
// as a client's kernel does. Where the data also has tinygrad's pre-opt graph (kernels whose
// gather tinygrad's pm_load_collapse removed, which uopd's passes knowingly keep), the heuristic
// is checked on that graph, and on uopd's only when the two graphs are the same.
TEST(TinygradHeuristics, ChooseTinygradsOptsForModelKernels) {
  std::ifstream in(std::string(UOPD_CORPUS_OPT_DIR) + "/heuristic_models.jsonl");
  ASSERT_TRUE(in.is_open());
  OptTarget cpu = OptTarget::Cpu(2);
  cpu.max_threads = 2;  // tinygrad's global_max[0] = CPU_COUNT (uopd's Cpu() allows 8 at least)
  const std::vector<std::pair<std::string, OptTarget>> targets = {
      {"CPU", cpu}, {"CUDA", OptTarget::Cuda("sm_80")}};
  int kernels = 0, checked = 0, matched = 0, tensor_cores = 0, preopt_differs = 0;
  for (std::string text; std::getline(in, text);) {
    if (text.empty()) continue;
    google::protobuf::Struct line;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text, &line).ok());
    const std::string name = line.fields().at("name").string_value();
    auto wire = MessageOf<v1::Graph>(line.fields().at("ast_scheduled"));
    UOPD_ASSERT_OK(wire);
    auto scheduled = DecodeKernelAst(*wire);
    UOPD_ASSERT_OK(scheduled);
    ++kernels;
    const auto preopts = line.fields().find("ast_preopt");
    for (const auto& [target_name, target] : targets) {
      SCOPED_TRACE(absl::StrCat(name, " on ", target_name));
      const std::vector<Opt> expected = ExpectedOpts(line, target_name);
      tensor_cores += !expected.empty() && expected.front().op == OptOp::kTc;
      ++checked;
      std::shared_ptr<const KernelAst> uopds = RunPreOptPasses(*scheduled, target);
      bool same_graph = true;
      if (preopts != line.fields().end()) {
        auto preopt_wire =
            MessageOf<v1::Graph>(preopts->second.struct_value().fields().at(target_name));
        UOPD_ASSERT_OK(preopt_wire);
        auto tinygrads = DecodeKernelAst(*preopt_wire);
        UOPD_ASSERT_OK(tinygrads);
        const std::vector<Opt> got = TinygradHeuristicsOn(**tinygrads, target);
        EXPECT_EQ(OptsToString(got), OptsToString(expected)) << "(from tinygrad's pre-opt AST)";
        same_graph = (*tinygrads)->hash == uopds->hash;
        preopt_differs += !same_graph;
        if (!same_graph) {
          matched += got == expected;
          continue;
        }
      }
      const std::vector<Opt> got = TinygradHeuristicsOn(*uopds, target);
      EXPECT_EQ(OptsToString(got), OptsToString(expected));
      matched += got == expected;
    }
  }
  std::printf(
      "[  NOTE    ] %d kernels x {CPU, CUDA}: %d of %d chose tinygrad's opts (%d from "
      "tinygrad's pre-opt AST, which uopd's passes do not reproduce), %d of them with tensor "
      "cores\n",
      kernels, matched, checked, preopt_differs, tensor_cores);
  EXPECT_EQ(kernels, 119);
  EXPECT_EQ(tensor_cores, 1);
  EXPECT_EQ(matched, checked);
}

TEST(TinygradHeuristics, HalfMatmulsOnAnNvidiaGpuTakeTensorCoresAsInTinygrad) {
  // tinygrad 0.12: get_program(a.matmul(b, dtype=float) with half a and b,
  // CUDARenderer("sm_80")).applied_opts.
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {64, "TC(0, (-1, 0, 1)) UPCAST(0, 4) UPCAST(0, 4) LOCAL(0, 2)"},
      {4096, "TC(0, (-1, 0, 1)) UPCAST(0, 4) UPCAST(1, 4) LOCAL(1, 4)"}};
  for (const auto& [n, expected] : cases) {
    auto ast = DecodeKernelAst(testing::Matmul(n, n, n, v1::DType::FLOAT16, v1::DType::FLOAT32));
    UOPD_ASSERT_OK(ast);
    const OptTarget gpu = OptTarget::Cuda("sm_80");
    EXPECT_EQ(OptsToString(TinygradHeuristicsOn(*RunPreOptPasses(*ast, gpu), gpu)), expected);
    // The float32 matmul takes no tensor core (tinygrad's ALLOW_TF32 is off by default).
    auto f32 = DecodeKernelAst(testing::Matmul(n, n, n));
    UOPD_ASSERT_OK(f32);
    EXPECT_EQ(OptsToString(TinygradHeuristicsOn(*RunPreOptPasses(*f32, gpu), gpu)).find("TC"),
              std::string::npos);
  }
}

// tinygrad's opts end with THREAD(0, n), which the CPU runtime's own split of the outermost loop
// makes unnecessary and which can cost time (a max pool's gradient: 1.18 ms with, 0.96 without):
// wherever tinygrad's choice for a model kernel is timed against the heuristics', so is the same
// list without it.
TEST(TinygradHeuristics, TimedTinygradChoicesAreAlsoTimedWithoutTheirThreads) {
  std::ifstream in(std::string(UOPD_CORPUS_OPT_DIR) + "/heuristic_models.jsonl");
  ASSERT_TRUE(in.is_open());
  OptTarget cpu = OptTarget::Cpu(2);
  cpu.max_threads = 2;
  int threaded = 0;
  for (std::string text; std::getline(in, text);) {
    if (text.empty()) continue;
    google::protobuf::Struct line;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text, &line).ok());
    SCOPED_TRACE(line.fields().at("name").string_value());
    auto wire = MessageOf<v1::Graph>(line.fields().at("ast_scheduled"));
    UOPD_ASSERT_OK(wire);
    auto scheduled = DecodeKernelAst(*wire);
    UOPD_ASSERT_OK(scheduled);
    const std::vector<std::vector<Opt>> contenders = HeuristicContendersFor(*scheduled, cpu);
    if (contenders.size() < 2) continue;  // nothing is timed: the heuristics' choice stands
    for (const std::vector<Opt>& opts : contenders) {
      if (opts.empty() || opts.back().op != OptOp::kThread) continue;
      ++threaded;
      std::vector<Opt> unthreaded = opts;
      while (!unthreaded.empty() && unthreaded.back().op == OptOp::kThread) unthreaded.pop_back();
      EXPECT_NE(std::find(contenders.begin(), contenders.end(), unthreaded), contenders.end())
          << OptsToString(opts);
    }
  }
  std::printf("[  NOTE    ] %d timed candidates end with THREAD\n", threaded);
  EXPECT_GT(threaded, 0);
}

}  // namespace
}  // namespace uopd
