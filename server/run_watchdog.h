// RunWatchdog: stops the kernels of calls that are over. A CPU kernel runs on its thread until it
// returns, so a client that cancels, disconnects or passes its deadline would otherwise leave
// it running (and a drain waiting on it). The watchdog checks the calls it watches every few
// milliseconds and sets the StopFlag of each that is over; the kernels read it as they run.
#ifndef UOPD_SERVER_RUN_WATCHDOG_H_
#define UOPD_SERVER_RUN_WATCHDOG_H_

#include <chrono>
#include <functional>
#include <list>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/device/stop_flag.h"
#include "grpcpp/server_context.h"

namespace uopd {

// When a call is over, however it arrived: past `deadline`, or once `gone` says so (asked from
// the watchdog's thread: it must be cheap).
struct CallEnd {
  std::chrono::system_clock::time_point deadline = std::chrono::system_clock::time_point::max();
  std::function<bool()> gone;
};

// A gRPC call's: its deadline, and cancelled or vanished.
CallEnd CallEndOf(const grpc::ServerContext& context);

// Safe for concurrent use.
class RunWatchdog {
 public:
  explicit RunWatchdog(absl::Duration period = absl::Milliseconds(5));
  ~RunWatchdog();  // stops its thread
  RunWatchdog(const RunWatchdog&) = delete;
  RunWatchdog& operator=(const RunWatchdog&) = delete;

  // One watched call: its StopFlag is set once the call is cancelled or past its deadline, for
  // as long as this lives. With a null watchdog, the flag is never set.
  class Watch {
   public:
    Watch(RunWatchdog* watchdog, const grpc::ServerContext& context);
    Watch(RunWatchdog* watchdog, CallEnd end);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    const StopFlag* flag() const { return &flag_; }
    // Before the flag is handed out: who pays for the scratch memory work for the call takes.
    void set_scratch_charger(StopFlag::ScratchCharger charger) {
      flag_.set_scratch_charger(std::move(charger));
    }
    void set_share(std::string share) { flag_.set_share(std::move(share)); }

   private:
    friend class RunWatchdog;
    RunWatchdog* watchdog_;
    CallEnd end_;
    StopFlag flag_;
    std::list<Watch*>::iterator position_;
  };

 private:
  void Loop();

  absl::Mutex mu_;
  std::list<Watch*> watches_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  const absl::Duration period_;
  std::thread thread_;
};

}  // namespace uopd

#endif  // UOPD_SERVER_RUN_WATCHDOG_H_
