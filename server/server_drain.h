// ServerDrain: a SIGTERM drain that ends when the calls in flight have. From Start() on, new
// calls are refused with UNAVAILABLE (a client retries on another server) and the daemon waits
// only for the calls already running, then stops gRPC a moment later (answers already decided
// get to leave). Left to itself, gRPC's Server::Shutdown would also wait, seconds, for idle
// client connections to close.
#ifndef UOPD_SERVER_SERVER_DRAIN_H_
#define UOPD_SERVER_SERVER_DRAIN_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace uopd {

// Safe for concurrent use.
class ServerDrain {
 public:
  // One call, counted while it lives unless the drain had started (then not admitted).
  class Call {
   public:
    explicit Call(ServerDrain* drain);  // a null drain admits every call
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;
    bool admitted() const { return admitted_; }

   private:
    ServerDrain* drain_;
    bool admitted_ = true;
  };

  // Refuses new calls from now on.
  void Start();
  // Waits until no admitted call is in flight, or `timeout`; true if none is.
  bool WaitIdle(absl::Duration timeout);

 private:
  absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace uopd

#endif  // UOPD_SERVER_SERVER_DRAIN_H_
