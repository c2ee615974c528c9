// KernelAstMemo: the same bytes decode once and share one KernelAst; failures, large ASTs and
// anything past the bound are decoded again, never served wrong.
#include "core/wire/kernel_ast_memo.h"

#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

TEST(KernelAstMemo, TheSameBytesShareOneDecodedAst) {
  KernelAstMemo memo;
  auto first = memo.Decode(testing::AddKernel(16), {});
  auto again = memo.Decode(testing::AddKernel(16), {});
  auto other = memo.Decode(testing::AddKernel(32), {});
  UOPD_ASSERT_OK(first);
  UOPD_ASSERT_OK(again);
  UOPD_ASSERT_OK(other);
  EXPECT_EQ(first->get(), again->get());
  EXPECT_NE(first->get(), other->get());
  EXPECT_NE((*first)->hash, (*other)->hash);
  EXPECT_EQ((*first)->hash, (*DecodeKernelAst(testing::AddKernel(16)))->hash);
  EXPECT_EQ(memo.size(), 2u);
}

TEST(KernelAstMemo, FailuresAreNotKeptAndSayWhatIsWrongEachTime) {
  KernelAstMemo memo;
  v1::Graph broken = testing::AddKernel(16);
  broken.mutable_nodes(0)->add_src(99);  // a source that does not exist
  for (int i = 0; i < 2; ++i) {
    auto decoded = memo.Decode(broken, {});
    EXPECT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().message(), DecodeKernelAst(broken).status().message());
  }
  EXPECT_EQ(memo.size(), 0u);
  // The limits apply on the way in: an AST over them is refused, not remembered.
  IrLimits tiny;
  tiny.max_nodes = 2;
  EXPECT_FALSE(memo.Decode(testing::AddKernel(16), tiny).ok());
  EXPECT_EQ(memo.size(), 0u);
}

TEST(KernelAstMemo, StaysWithinItsBounds) {
  KernelAstMemo memo(/*max_entries=*/3, /*max_entry_bytes=*/1 << 10);
  for (int n = 1; n <= 10; ++n) {
    UOPD_ASSERT_OK(memo.Decode(testing::AddKernel(n), {}));
    EXPECT_LE(memo.size(), 3u);
  }
  KernelAstMemo small_entries(/*max_entries=*/8, /*max_entry_bytes=*/8);
  auto big = small_entries.Decode(testing::AddKernel(16), {});
  UOPD_ASSERT_OK(big);
  EXPECT_EQ(small_entries.size(), 0u) << "larger than an entry may be: decoded, not kept";
}

}  // namespace
}  // namespace uopd
