// LargeRequestGate: after a large request is refused for its quota, the client's next large ones
// wait out a back-off that doubles and ends with the first one not refused.
#include "server/large_request_gate.h"

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::StatusIs;

const absl::Status kOverQuota = absl::ResourceExhaustedError("over its limit of 8388608");

TEST(LargeRequestGate, AQuotaRefusalHoldsBackTheClientsLargeRequestsOnly) {
  LargeRequestGate gate(1000, absl::Seconds(30), absl::Seconds(60));
  gate.Record("mallory", 5000, kOverQuota);
  EXPECT_TRUE(StatusIs(gate.Admit("mallory", 5000), absl::StatusCode::kResourceExhausted,
                       {"refused unread", "over its limit of 8388608"}));
  UOPD_EXPECT_OK(gate.Admit("mallory", 999));  // small requests pass
  UOPD_EXPECT_OK(gate.Admit("alice", 5000));   // others are not held back
  // Small requests' outcomes say nothing of large ones.
  gate.Record("alice", 10, kOverQuota);
  UOPD_EXPECT_OK(gate.Admit("alice", 5000));
}

TEST(LargeRequestGate, TheBackOffDoublesAndEndsWithARequestThatIsNotRefused) {
  LargeRequestGate gate(1000, absl::Milliseconds(100), absl::Milliseconds(300));
  gate.Record("mallory", 5000, kOverQuota);
  absl::SleepFor(absl::Milliseconds(150));
  UOPD_EXPECT_OK(gate.Admit("mallory", 5000));  // the first back-off (100 ms) is over
  gate.Record("mallory", 5000, kOverQuota);     // refused again: 200 ms
  absl::SleepFor(absl::Milliseconds(150));
  EXPECT_FALSE(gate.Admit("mallory", 5000).ok());
  absl::SleepFor(absl::Milliseconds(100));
  UOPD_EXPECT_OK(gate.Admit("mallory", 5000));
  gate.Record("mallory", 5000, kOverQuota);  // 400 ms, capped at 300
  EXPECT_TRUE(StatusIs(gate.Admit("mallory", 5000), absl::StatusCode::kResourceExhausted,
                       {"wait 300ms after each refusal"}));
  gate.Record("mallory", 5000, absl::OkStatus());  // served: the back-off ends
  UOPD_EXPECT_OK(gate.Admit("mallory", 5000));
  gate.Record("mallory", 5000, kOverQuota);  // and starts again from the first length
  EXPECT_TRUE(StatusIs(gate.Admit("mallory", 5000), absl::StatusCode::kResourceExhausted,
                       {"wait 100ms after each refusal"}));
}

}  // namespace
}  // namespace uopd
