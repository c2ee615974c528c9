#include "server/run_watchdog.h"

namespace uopd {

RunWatchdog::RunWatchdog(absl::Duration period) : period_(period), thread_([this] { Loop(); }) {}

RunWatchdog::~RunWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  thread_.join();
}

CallEnd CallEndOf(const grpc::ServerContext& context) {
  return CallEnd{context.deadline(), [&context] { return context.IsCancelled(); }};
}

RunWatchdog::Watch::Watch(RunWatchdog* watchdog, const grpc::ServerContext& context)
    : Watch(watchdog, CallEndOf(context)) {}

RunWatchdog::Watch::Watch(RunWatchdog* watchdog, CallEnd end)
    : watchdog_(watchdog), end_(std::move(end)) {
  flag_.set_deadline(end_.deadline);
  if (watchdog_ == nullptr) return;
  absl::MutexLock lock(&watchdog_->mu_);
  position_ = watchdog_->watches_.insert(watchdog_->watches_.end(), this);
}

RunWatchdog::Watch::~Watch() {
  if (watchdog_ == nullptr) return;
  absl::MutexLock lock(&watchdog_->mu_);
  watchdog_->watches_.erase(position_);
}

void RunWatchdog::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    // Sleeps until there is something to watch, then looks every period.
    auto busy = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ || !watches_.empty(); };
    mu_.Await(absl::Condition(&busy));
    if (done_) return;
    const auto now = std::chrono::system_clock::now();
    for (Watch* watch : watches_) {
      if (watch->flag_.stopped()) continue;
      // `gone` covers a cancelling or vanished client; the deadline is checked here too, so a
      // run stops on time even before gRPC notices.
      if (now > watch->end_.deadline || (watch->end_.gone && watch->end_.gone())) {
        watch->flag_.Stop();
      }
    }
    mu_.AwaitWithTimeout(absl::Condition(&done_), period_);
    if (done_) return;
  }
}

}  // namespace uopd
