// AtDeadline: a call stopped at its deadline answers DEADLINE_EXCEEDED, not CANCELLED.
#include "server/serve_rpc.h"

#include "gtest/gtest.h"

namespace uopd {
namespace {

using Clock = std::chrono::system_clock;

// The flaky Python test_aio.py::test_deadlines: on a loaded machine the server's deadline
// timer marked the call cancelled, the watchdog stopped the kernel, and the client, whose own
// timer had not run yet, got the run's CANCELLED.
TEST(AtDeadline, ACallStoppedAtItsDeadlineExceededIt) {
  const Clock::time_point deadline = Clock::now();
  absl::Status status = AtDeadline(absl::CancelledError("the run was cancelled"), deadline,
                                   deadline - std::chrono::milliseconds(10), "Execute");
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(), "Execute passed its deadline (the run was cancelled)");
  status = AtDeadline(absl::CancelledError("x"), deadline, deadline + std::chrono::seconds(1),
                      "Execute");
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(AtDeadline, OtherOutcomesAndEarlierCancellationsStayAsTheyAre) {
  const Clock::time_point deadline = Clock::now();
  EXPECT_EQ(
      AtDeadline(absl::CancelledError("x"), deadline, deadline - std::chrono::seconds(1), "Execute")
          .code(),
      absl::StatusCode::kCancelled);  // the client cancelled well before its deadline
  EXPECT_EQ(AtDeadline(absl::CancelledError("x"), Clock::time_point::max(), Clock::now(), "Execute")
                .code(),
            absl::StatusCode::kCancelled);  // no deadline
  EXPECT_TRUE(AtDeadline(absl::OkStatus(), deadline, deadline, "Execute").ok());
  EXPECT_EQ(AtDeadline(absl::NotFoundError("x"), deadline, deadline, "Execute").code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace uopd
