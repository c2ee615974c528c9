// The Scheduler against tinygrad: every case of the optimized corpus (tests/corpus_opt) replayed
// with its opts must give tinygrad's optimized AST, node for node, whether it starts from the
// pre-opt AST tinygrad's optimizer received or from the scheduled AST a client sends (through
// uopd's pre-optimization passes).
#include "core/opt/scheduler.h"

#include <cstdio>
#include <functional>

#include "absl/strings/str_cat.h"
#include "core/corpus/corpus_file.h"
#include "core/ir/printer.h"
#include "core/opt/preopt.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_opts.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::OptOf;
using testing::TargetOf;

// Applies each case's opts to the AST `start` makes of it and compares with tinygrad's result.
void ReplayCorpus(
    const std::function<std::shared_ptr<const KernelAst>(const v1::CorpusCase&)>& start) {
  auto files = ListCorpusFiles({std::string(UOPD_CORPUS_OPT_DIR) + "/cases"});
  UOPD_ASSERT_OK(files);
  int matched = 0, skipped = 0;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    UOPD_ASSERT_OK(entry);
    const v1::CorpusCase& kase = entry->kase;
    SCOPED_TRACE(kase.name());
    std::shared_ptr<const KernelAst> initial = start(kase);
    ASSERT_NE(initial, nullptr);
    auto expected = DecodeKernelAst(kase.ast());
    UOPD_ASSERT_OK(expected);
    Scheduler scheduler(*initial, TargetOf(kase));
    bool unsupported = false;
    for (const v1::CorpusOpt& wire : kase.opts()) {
      auto opt = OptOf(wire);
      UOPD_ASSERT_OK(opt);
      absl::Status applied = scheduler.Apply(*opt);
      if (applied.code() == absl::StatusCode::kUnimplemented) {
        unsupported = true;
        break;
      }
      UOPD_ASSERT_OK(applied) << opt->ToString();
    }
    if (unsupported) {
      ++skipped;
      std::printf("[  NOTE    ] %s: not replayed (%s)\n", kase.name().c_str(), "TC");
      continue;
    }
    auto optimized = scheduler.Finish();
    EXPECT_EQ(optimized->hash, (*expected)->hash)
        << "ours:\n"
        << PrintGraph(optimized->root) << "\ntinygrad's:\n"
        << PrintGraph((*expected)->root);
    matched += optimized->hash == (*expected)->hash;
  }
  std::printf("[  NOTE    ] %d cases replayed to tinygrad's AST, %d skipped\n", matched, skipped);
  EXPECT_EQ(skipped, 0);  // the TC case (shape only) too
  EXPECT_GE(matched, 55);
}

TEST(Scheduler, ReplaysTinygradsOptsToTheSameAst) {
  ReplayCorpus([](const v1::CorpusCase& kase) -> std::shared_ptr<const KernelAst> {
    auto preopt = DecodeKernelAst(kase.ast_preopt());
    EXPECT_TRUE(preopt.ok()) << preopt.status();
    return preopt.ok() ? *preopt : nullptr;
  });
}

// What a tinygrad client sends is the scheduled AST: its opts number the axes of the graph the
// pre-optimization passes make of it.
TEST(Scheduler, ReplaysTinygradsOptsFromTheScheduledAst) {
  ReplayCorpus([](const v1::CorpusCase& kase) -> std::shared_ptr<const KernelAst> {
    auto scheduled = DecodeKernelAst(kase.ast_scheduled());
    EXPECT_TRUE(scheduled.ok()) << scheduled.status();
    return scheduled.ok() ? RunPreOptPasses(*scheduled, TargetOf(kase)) : nullptr;
  });
}

Opt Tc(int axis, int tc_select, int tc_opt, int use_tensor_cores) {
  Opt opt{OptOp::kTc, axis, 0};
  opt.tc = {tc_select, tc_opt, use_tensor_cores};
  return opt;
}

std::shared_ptr<const KernelAst> Matmul32() {
  auto ast = DecodeKernelAst(testing::Matmul(32, 32, 32));
  EXPECT_TRUE(ast.ok()) << ast.status();
  return *ast;
}

TEST(Scheduler, GroupsAReductionHoldingAnotherButNotOneInsideAnother) {
  // tinygrad refuses a GROUP whose reduction sits inside another's loop, not one whose
  // reduction holds a reduction of its own (a variance's outer sum).
  auto variance = DecodeKernelAst(testing::Variance(8, 64));
  UOPD_ASSERT_OK(variance);
  const OptTarget gpu = OptTarget::Cuda("sm_80");
  Scheduler outer(**variance, gpu);
  UOPD_EXPECT_OK(outer.Apply(Opt{OptOp::kGroupTop, 0, 16}));  // j: holds the mean
  Scheduler inner(**variance, gpu);
  UOPD_EXPECT_OK(inner.Apply(Opt{OptOp::kGroup, 1, 16}));  // k: the mean, outside j's loop
  // out[i] = sum_j x[i, j] * sum_k y[j, k]: the inner sum runs inside j's loop.
  using v1::DType;
  using v1::Node;
  testing::GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 8);
  int x = g.Buffer(1, DType::FLOAT32, 8 * 16);
  int y = g.Buffer(2, DType::FLOAT32, 16 * 16);
  int i = g.Range(g.Index(8), 0);
  int j = g.Range(g.Index(16), 1, v1::RangeArg::REDUCE);
  int k = g.Range(g.Index(16), 2, v1::RangeArg::REDUCE);
  int row = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(y, g.RowMajor(j, 16, k)), {k});
  int product = g.Node(Node::MUL, DType::FLOAT32, {g.Load(x, g.RowMajor(i, 16, j)), row});
  int total = g.Reduce(Node::ADD, DType::FLOAT32, product, {j});
  auto nested = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), total), {i})}));
  UOPD_ASSERT_OK(nested);
  Scheduler refused(**nested, gpu);
  EXPECT_TRUE(testing::StatusIs(refused.Apply(Opt{OptOp::kGroup, 1, 4}),
                                absl::StatusCode::kInvalidArgument, {"inside another reduce"}));
}

TEST(Scheduler, ATensorCoreShapesFloat32OnlyWhereTf32IsAllowed) {
  OptTarget sm80 = OptTarget::Cuda("sm_80");
  Scheduler plain(*Matmul32(), sm80);
  EXPECT_TRUE(testing::StatusIs(plain.Apply(Tc(0, -1, 0, 2)), absl::StatusCode::kInvalidArgument,
                                {"no tensor core available"}));
  sm80.allow_tf32 = true;
  Scheduler tf32(*Matmul32(), sm80);
  UOPD_ASSERT_OK(tf32.Apply(Tc(0, -1, 0, 2)));
  // A warp of 32 threads, the M x N tile's upcasts and K's three factors of 2 unrolled.
  int warps = 0, upcasts = 0, unrolls = 0;
  for (const UOp* range : tf32.Axes()) {
    warps += range->arg().axis_type == AxisType::kWarp;
    upcasts += range->arg().axis_type == AxisType::kUpcast;
    unrolls += range->arg().axis_type == AxisType::kUnroll;
  }
  EXPECT_EQ(warps, 1);
  EXPECT_EQ(upcasts, 2);
  EXPECT_EQ(unrolls, 3);
  EXPECT_TRUE(testing::StatusIs(tf32.Apply(Opt{OptOp::kGroup, 0, 2}),
                                absl::StatusCode::kInvalidArgument,
                                {"no grouping with tensor cores"}));
}

TEST(Scheduler, ATensorCoreReplacesTheReductionByItsInstructionOverEachThreadsFragments) {
  // tinygrad's use_tensor_cores 1: a half matmul with a float accumulator on sm_80 takes the
  // m16n8k16 core; K = 32 is two of its K, summed by the REDUCE that is left.
  auto half = DecodeKernelAst(testing::Matmul(32, 32, 32, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(half);
  Scheduler wmma(**half, OptTarget::Cuda("sm_80"));
  UOPD_ASSERT_OK(wmma.Apply(Tc(0, -1, 0, 1)));
  auto optimized = wmma.Finish();
  std::vector<int> contract_lanes;
  int instructions = 0, unrolls = 0, reduces = 0;
  for (const UOp* n : Toposort(optimized->root)) {
    if (n->op() == Op::kWmma) {
      ++instructions;
      EXPECT_EQ(n->arg().str, "WMMA_8_16_16_half_float");
      EXPECT_EQ(n->dtype().count, 4);
    }
    if (n->op() == Op::kContract) contract_lanes.push_back(n->dtype().count);
    unrolls += n->op() == Op::kUnroll;
    if (n->op() == Op::kReduce) {
      ++reduces;
      EXPECT_EQ(n->src(0)->op(), Op::kUnroll);
      ASSERT_EQ(n->num_src(), 2u);
      EXPECT_EQ(n->src(1)->src(0)->arg().i, 2);  // the two K blocks
    }
  }
  EXPECT_EQ(instructions, 1);
  EXPECT_EQ(unrolls, 1);
  EXPECT_EQ(reduces, 1);
  std::sort(contract_lanes.begin(), contract_lanes.end());
  EXPECT_EQ(contract_lanes, (std::vector<int>{4, 8}));  // B's and A's fragments
}

TEST(Scheduler, ATensorCoresWarpIsNeitherPaddedNorOneTheKernelHadAlready) {
  auto half = DecodeKernelAst(testing::Matmul(32, 32, 32, v1::DType::FLOAT16, v1::DType::FLOAT32));
  UOPD_ASSERT_OK(half);
  Scheduler wmma(**half, OptTarget::Cuda("sm_80"));
  UOPD_ASSERT_OK(wmma.Apply(Tc(0, -1, 0, 1)));
  const std::vector<const UOp*> axes = wmma.Axes();
  const int warp = static_cast<int>(
      std::find_if(axes.begin(), axes.end(),
                   [](const UOp* r) { return r->arg().axis_type == AxisType::kWarp; }) -
      axes.begin());
  ASSERT_LT(warp, static_cast<int>(axes.size()));
  EXPECT_TRUE(testing::StatusIs(wmma.Apply(Opt{OptOp::kPadTo, warp, 48}),
                                absl::StatusCode::kInvalidArgument, {"cannot pad a warp"}));
  // A kernel with a WARP range of its own (a client may send one) takes no tensor core.
  testing::GraphBuilder g;
  const auto f16 = v1::DType::FLOAT16;
  int out = g.Buffer(0, v1::DType::FLOAT32, 32 * 32);
  int i = g.Range(g.Index(32), 0);
  int j = g.Range(g.Index(32), 1, v1::RangeArg::WARP);
  int r = g.Range(g.Index(32), 2, v1::RangeArg::REDUCE);
  int product = g.Node(v1::Node::MUL, f16,
                       {g.Load(g.Buffer(1, f16, 32 * 32), g.RowMajor(i, 32, r)),
                        g.Load(g.Buffer(2, f16, 32 * 32), g.RowMajor(r, 32, j))});
  int sum = g.Reduce(v1::Node::ADD, v1::DType::FLOAT32,
                     g.Node(v1::Node::CAST, v1::DType::FLOAT32, {product}), {r});
  auto warped =
      DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, g.RowMajor(i, 32, j)), sum), {i, j})}));
  UOPD_ASSERT_OK(warped);
  Scheduler refused(**warped, OptTarget::Cuda("sm_80"));
  EXPECT_TRUE(testing::StatusIs(refused.Apply(Tc(0, -1, 0, 1)), absl::StatusCode::kInvalidArgument,
                                {"WARP range"}));
}

TEST(Scheduler, ATensorCoreOptIsFirstAndNamesAValidCore) {
  OptTarget sm80 = OptTarget::Cuda("sm_80");
  sm80.allow_tf32 = true;
  Scheduler later(*Matmul32(), sm80);
  UOPD_ASSERT_OK(later.Apply(Opt{OptOp::kUpcast, 0, 2}));
  EXPECT_TRUE(testing::StatusIs(later.Apply(Tc(0, -1, 0, 2)), absl::StatusCode::kInvalidArgument,
                                {"must be first"}));
  Scheduler wmma(*Matmul32(), sm80);
  EXPECT_TRUE(testing::StatusIs(wmma.Apply(Tc(0, 9, 0, 1)), absl::StatusCode::kInvalidArgument,
                                {"tc_select"}));
  // A CPU has no tensor cores.
  Scheduler cpu(*Matmul32(), OptTarget::Cpu(8));
  EXPECT_TRUE(testing::StatusIs(cpu.Apply(Tc(0, -1, 0, 2)), absl::StatusCode::kInvalidArgument,
                                {"no tensor core available"}));
}

}  // namespace
}  // namespace uopd
