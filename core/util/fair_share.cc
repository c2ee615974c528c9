#include "core/util/fair_share.h"

#include <algorithm>

namespace uopd {

FairShare::FairShare(int slots, absl::Duration reserve_window)
    : slots_(std::max(1, slots)), reserve_window_(reserve_window), free_(std::max(1, slots)) {}

bool FairShare::Acquire(const std::string& share, absl::FunctionRef<bool()> give_up) {
  absl::MutexLock lock(&mu_);
  if (give_up()) return false;
  if (waiters_.empty() && free_ > 0 && MayTakeLocked(share)) {
    GrantLocked(share);
    return true;
  }
  Waiter me{share};
  const auto place = waiters_.insert(waiters_.end(), &me);
  while (!me.granted) {
    if (give_up()) {
      waiters_.erase(place);
      // A slot kept free for this share's sake may now go to another.
      OfferLocked();
      return false;
    }
    // A slot left free for the reserve goes once the reserve no longer applies: look again.
    mu_.AwaitWithTimeout(absl::Condition(&me.granted), absl::Milliseconds(5));
    if (!me.granted) OfferLocked();
  }
  return true;
}

void FairShare::Release(const std::string& share) {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(share);
  if (it != held_.end() && --it->second <= 0) held_.erase(it);
  ++free_;
  OfferLocked();
}

int FairShare::Held(const std::string& share) const {
  absl::MutexLock lock(&mu_);
  return HeldLocked(share);
}

int FairShare::HeldLocked(const std::string& share) const {
  auto it = held_.find(share);
  return it == held_.end() ? 0 : it->second;
}

void FairShare::OfferLocked() {
  while (free_ > 0 && !waiters_.empty()) {
    // 0 for a share never served (or forgotten): it goes first among equals.
    auto last_served = [&](const std::string& share) -> uint64_t {
      auto it = last_served_.find(share);
      return it == last_served_.end() ? 0 : it->second.grant;
    };
    auto chosen = waiters_.end();
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (!MayTakeLocked((*it)->share)) continue;
      if (chosen == waiters_.end()) {
        chosen = it;
        continue;
      }
      const int a = HeldLocked((*it)->share), b = HeldLocked((*chosen)->share);
      if (a < b || (a == b && last_served((*it)->share) < last_served((*chosen)->share))) {
        chosen = it;
      }
    }
    if (chosen == waiters_.end()) return;  // every waiter is at its share: the reserve stays free
    Waiter* waiter = *chosen;
    waiters_.erase(chosen);
    GrantLocked(waiter->share);
    waiter->granted = true;
  }
}

bool FairShare::MayTakeLocked(const std::string& share) const {
  if (slots_ < 2) return true;
  const int held = HeldLocked(share);
  if (held < slots_ - 1) return true;
  for (const auto& [other, count] : held_) {
    if (other != share) return false;
  }
  for (const Waiter* waiter : waiters_) {
    if (waiter->share != share) return false;
  }
  const absl::Time now = absl::Now();
  for (const auto& [other, served] : last_served_) {
    if (other != share && now - served.at < reserve_window_) return false;
  }
  return true;
}

void FairShare::GrantLocked(const std::string& share) {
  --free_;
  ++held_[share];
  // Bounded by forgetting: a forgotten share only counts as not served lately.
  if (last_served_.size() >= 4096) last_served_.clear();
  last_served_[share] = LastServed{++grants_, absl::Now()};
}

}  // namespace uopd
