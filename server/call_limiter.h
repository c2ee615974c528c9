// CallLimiter: how many gRPC calls one client (a quota key: a token's identity, or an anonymous
// host) may have in flight at once. A synchronous gRPC call holds a server thread for as long
// as it lives, idle streams included, so without a bound per client one caller could take every
// thread and starve the others; past the bound a call is refused at once (RESOURCE_EXHAUSTED),
// which gives its thread back within microseconds.
#ifndef UOPD_SERVER_CALL_LIMITER_H_
#define UOPD_SERVER_CALL_LIMITER_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace uopd {

// Safe for concurrent use.
class CallLimiter {
 public:
  // At most `max_per_client` calls in flight per quota key (0: no bound).
  explicit CallLimiter(int64_t max_per_client) : max_(max_per_client) {}

  // One call, counted for as long as it lives when admitted.
  class Admission {
   public:
    Admission() = default;  // admits without counting (no limiter)
    Admission(Admission&& other) noexcept;
    Admission& operator=(Admission&&) = delete;
    Admission(const Admission&) = delete;
    ~Admission();
    // OK, or RESOURCE_EXHAUSTED naming the client and the bound.
    const absl::Status& status() const { return status_; }

   private:
    friend class CallLimiter;
    CallLimiter* limiter_ = nullptr;  // set when counted
    std::string key_;
    absl::Status status_;
  };

  Admission Admit(const std::string& quota_key);
  int64_t InFlight(const std::string& quota_key);

 private:
  void Release(const std::string& quota_key);

  const int64_t max_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int64_t> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd

#endif  // UOPD_SERVER_CALL_LIMITER_H_
