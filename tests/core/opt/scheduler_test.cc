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
  EXPECT_LE(skipped, 1);
  EXPECT_GE(matched, 54);
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

}  // namespace
}  // namespace uopd
