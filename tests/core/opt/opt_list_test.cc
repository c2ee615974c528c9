// Opt lists as people type them (uopctl --optimize, the benches): tinygrad's spelling, the way
// OptsToString writes it, read back.
#include "core/opt/opt.h"
#include "core/wire/opt_codec.h"
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

// An opt list is work before anything runs (each opt rewrites the kernel): 4,000 x UPCAST(0, 1)
// once took 68 CPU-seconds on the request thread. Past the bound a list is refused at once.
TEST(OptLists, AreBoundedOnTheWireAndAsText) {
  google::protobuf::RepeatedPtrField<v1::Opt> wire;
  std::string text;
  for (int i = 0; i < kMaxOptsPerKernel; ++i) {
    v1::Opt* opt = wire.Add();
    opt->set_op("UPCAST");
    opt->set_axis(0);
    opt->set_arg(1);
    text += "UPCAST(0, 1) ";
  }
  UOPD_EXPECT_OK(DecodeOpts(wire, "optimization.opts"));
  UOPD_EXPECT_OK(ParseOptList(text));
  *wire.Add() = wire[0];
  text += "UPCAST(0, 1)";
  EXPECT_TRUE(testing::StatusIs(DecodeOpts(wire, "optimization.opts"),
                                absl::StatusCode::kInvalidArgument,
                                {"optimization.opts", "65 opts", "at most 64"}));
  EXPECT_TRUE(testing::StatusIs(ParseOptList(text), absl::StatusCode::kInvalidArgument,
                                {"more than 64 opts"}));
}

}  // namespace
}  // namespace uopd
