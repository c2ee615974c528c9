#include "server/call_limiter.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace uopd {

CallLimiter::Admission::Admission(Admission&& other) noexcept
    : limiter_(std::exchange(other.limiter_, nullptr)),
      key_(std::move(other.key_)),
      status_(std::move(other.status_)) {}

CallLimiter::Admission::~Admission() {
  if (limiter_ != nullptr) limiter_->Release(key_);
}

CallLimiter::Admission CallLimiter::Admit(const std::string& quota_key) {
  Admission admission;
  if (max_ <= 0) return admission;
  absl::MutexLock lock(&mu_);
  int64_t& count = in_flight_[quota_key];
  if (count >= max_) {
    admission.status_ = absl::ResourceExhaustedError(
        absl::StrCat("client ", quota_key, " already has ", count,
                     " calls in flight, the most one client may (--max_calls_per_client)"));
    return admission;
  }
  ++count;
  admission.limiter_ = this;
  admission.key_ = quota_key;
  return admission;
}

int64_t CallLimiter::InFlight(const std::string& quota_key) {
  absl::MutexLock lock(&mu_);
  auto found = in_flight_.find(quota_key);
  return found == in_flight_.end() ? 0 : found->second;
}

void CallLimiter::Release(const std::string& quota_key) {
  absl::MutexLock lock(&mu_);
  auto found = in_flight_.find(quota_key);
  if (found != in_flight_.end() && --found->second <= 0) in_flight_.erase(found);
}

}  // namespace uopd
