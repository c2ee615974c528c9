// Opt lists as people type them (uopctl --optimize, the benches): tinygrad's spelling, the way
// OptsToString writes it, read back.
#include "core/opt/opt.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

TEST(ParseOptList, ReadsBackWhatOptsToStringWrites) {
  auto opts = ParseOptList("UPCAST(1, 16) UNROLL(0,4), NOLOCALS TC(0, (-1, 2, 1)) SWAP(0, 2)");
  UOPD_ASSERT_OK(opts);
  ASSERT_EQ(opts->size(), 5u);
  EXPECT_EQ(OptsToString(*opts),
            "UPCAST(1, 16) UNROLL(0, 4) NOLOCALS TC(0, (-1, 2, 1)) SWAP(0, 2)");
  auto again = ParseOptList(OptsToString(*opts));
  UOPD_ASSERT_OK(again);
  EXPECT_EQ(*again, *opts);
  EXPECT_TRUE(ParseOptList("")->empty());
  EXPECT_EQ(ParseOptList("LOCAL(2)")->front().arg, 0);  // the whole axis
}

TEST(ParseOptList, NamesTheOptThatDoesNotParse) {
  EXPECT_TRUE(testing::StatusIs(ParseOptList("UPCAST(1, 4) UPCASTT(0, 2)"),
                                absl::StatusCode::kInvalidArgument, {"opt 1", "UPCASTT"}));
  EXPECT_TRUE(testing::StatusIs(ParseOptList("UPCAST"), absl::StatusCode::kInvalidArgument,
                                {"opt 0", "needs (axis, amount)"}));
  EXPECT_TRUE(testing::StatusIs(ParseOptList("UPCAST(1, x)"), absl::StatusCode::kInvalidArgument,
                                {"'x' is not an integer"}));
  EXPECT_TRUE(testing::StatusIs(ParseOptList("UPCAST(1, 4"), absl::StatusCode::kInvalidArgument,
                                {"no closing parenthesis"}));
  EXPECT_TRUE(testing::StatusIs(ParseOptList("TC(0, 1)"), absl::StatusCode::kInvalidArgument,
                                {"TC takes"}));
}

}  // namespace
}  // namespace uopd
