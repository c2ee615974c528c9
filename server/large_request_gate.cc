#include "server/large_request_gate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace uopd {
namespace {

// Entries of clients whose back-off ended are dropped once the map holds this many.
constexpr size_t kPruneAt = 4096;

}  // namespace

absl::Status LargeRequestGate::Admit(const std::string& client, int64_t bytes) const {
  if (!IsLarge(bytes)) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  auto it = backoffs_.find(client);
  if (it == backoffs_.end()) return absl::OkStatus();
  const absl::Duration left = it->second.until - absl::Now();
  if (left <= absl::ZeroDuration()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "a request of ", bytes, " bytes is refused unread for another ",
      absl::FormatDuration(absl::Trunc(left, absl::Milliseconds(1))),
      ": this client's last large request was refused (", it->second.why, "); large requests wait ",
      absl::FormatDuration(it->second.length), " after each refusal"));
}

void LargeRequestGate::Record(const std::string& client, int64_t bytes,
                              const absl::Status& outcome) {
  if (!IsLarge(bytes)) return;
  absl::MutexLock lock(&mu_);
  if (outcome.code() != absl::StatusCode::kResourceExhausted) {
    backoffs_.erase(client);
    return;
  }
  const absl::Time now = absl::Now();
  if (backoffs_.size() >= kPruneAt) {
    for (auto e = backoffs_.begin(); e != backoffs_.end();) {
      if (e->second.until <= now) {
        backoffs_.erase(e++);
      } else {
        ++e;
      }
    }
  }
  auto [it, fresh] = backoffs_.try_emplace(client);
  BackOff& b = it->second;
  b.length = fresh ? first_backoff_ : std::min(max_backoff_, b.length * 2);
  b.until = now + b.length;
  b.why = std::string(outcome.message().substr(0, 200));
}

}  // namespace uopd
