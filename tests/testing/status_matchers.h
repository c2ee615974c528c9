// Small stand-ins for abseil's status matchers (absent from the abseil in Debian 12).
#ifndef UOPD_TESTS_TESTING_STATUS_MATCHERS_H_
#define UOPD_TESTS_TESTING_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace uopd::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// Passes when `s` has `code` and its message contains every one of `needles`.
template <typename S>
::testing::AssertionResult StatusIs(const S& s, absl::StatusCode code,
                                    std::initializer_list<std::string> needles = {}) {
  const absl::Status& status = GetStatus(s);
  if (status.code() != code) {
    return ::testing::AssertionFailure()
           << "expected code " << absl::StatusCodeToString(code) << ", got " << status;
  }
  for (const std::string& needle : needles) {
    if (std::string(status.message()).find(needle) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message lacks '" << needle << "': " << status.message();
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace uopd::testing

// Both accept a streamed message: UOPD_EXPECT_OK(f()) << "while doing x";
// (The switch keeps an `else` after the macro from binding to the macro's own `if`.)
#define UOPD_EXPECT_OK(expr)                                                             \
  switch (0)                                                                             \
  case 0:                                                                                \
  default:                                                                               \
    if (const ::absl::Status uopd_s_ = ::uopd::testing::GetStatus(expr); uopd_s_.ok()) { \
    } else                                                                               \
      ADD_FAILURE() << #expr << ": " << uopd_s_ << " "

#define UOPD_ASSERT_OK(expr)                                                             \
  switch (0)                                                                             \
  case 0:                                                                                \
  default:                                                                               \
    if (const ::absl::Status uopd_s_ = ::uopd::testing::GetStatus(expr); uopd_s_.ok()) { \
    } else                                                                               \
      FAIL() << #expr << ": " << uopd_s_ << " "

#endif  // UOPD_TESTS_TESTING_STATUS_MATCHERS_H_
