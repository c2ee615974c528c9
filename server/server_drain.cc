#include "server/server_drain.h"

namespace uopd {

ServerDrain::Call::Call(ServerDrain* drain) : drain_(drain) {
  if (drain_ == nullptr) return;
  absl::MutexLock lock(&drain_->mu_);
  admitted_ = !drain_->draining_;
  if (admitted_) ++drain_->in_flight_;
}

ServerDrain::Call::~Call() {
  if (drain_ == nullptr || !admitted_) return;
  absl::MutexLock lock(&drain_->mu_);
  --drain_->in_flight_;
}

void ServerDrain::Start() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

bool ServerDrain::WaitIdle(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

}  // namespace uopd
