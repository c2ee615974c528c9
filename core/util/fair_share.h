// FairShare: a fixed number of interchangeable slots (compile workers, cores for heavy work)
// shared by callers grouped in shares (a share is a caller's quota key), so one caller's many
// or slow jobs cannot make another's wait for all of them.
//
// A free slot goes to the waiting share with the fewest slots held and, among those, the one
// served longest ago (round robin with one slot). And a share never holds every slot while
// another share holds one, waits for one, or was served within the reserve window: a caller
// keeping every slot busy with slow jobs would otherwise make another's next job wait for one
// of them to end. Alone, a caller uses every slot.
#ifndef UOPD_CORE_UTIL_FAIR_SHARE_H_
#define UOPD_CORE_UTIL_FAIR_SHARE_H_

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace uopd {

// Safe for concurrent use.
class FairShare {
 public:
  explicit FairShare(int slots, absl::Duration reserve_window = absl::Seconds(5));
  FairShare(const FairShare&) = delete;
  FairShare& operator=(const FairShare&) = delete;

  // Takes a slot for `share`, waiting for one; false, with none taken, once `give_up()` is true
  // (asked on entry and every few milliseconds while waiting: stop flags are not under a mutex).
  bool Acquire(const std::string& share, absl::FunctionRef<bool()> give_up);
  // Gives back a slot `share` took.
  void Release(const std::string& share);

  // A slot held until destroyed.
  class Slot {
   public:
    Slot(FairShare* owner, std::string share) : owner_(owner), share_(std::move(share)) {}
    Slot(Slot&& other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)), share_(std::move(other.share_)) {}
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Slot& operator=(Slot&& other) noexcept {
      if (this != &other) {
        if (owner_ != nullptr) owner_->Release(share_);
        owner_ = std::exchange(other.owner_, nullptr);
        share_ = std::move(other.share_);
      }
      return *this;
    }
    ~Slot() {
      if (owner_ != nullptr) owner_->Release(share_);
    }

   private:
    FairShare* owner_;
    std::string share_;
  };
  // Acquire, held as a Slot; none once `give_up()` is true.
  std::optional<Slot> Take(const std::string& share, absl::FunctionRef<bool()> give_up) {
    if (!Acquire(share, give_up)) return std::nullopt;
    return std::optional<Slot>(std::in_place, this, share);
  }

  int slots() const { return slots_; }
  // Slots held by `share` now.
  int Held(const std::string& share) const;

 private:
  struct Waiter {
    std::string share;
    bool granted = false;  // set (and the waiter dequeued) by whoever hands it a slot
  };
  // When each share was last given a slot: its place among grants (grants_ counts them) for the
  // round robin, and the time, for the reserve.
  struct LastServed {
    uint64_t grant = 0;
    absl::Time at;
  };

  bool MayTakeLocked(const std::string& share) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void GrantLocked(const std::string& share) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands free slots to waiters in turn, while one may take one.
  void OfferLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int HeldLocked(const std::string& share) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int slots_;
  const absl::Duration reserve_window_;
  mutable absl::Mutex mu_;
  int free_ ABSL_GUARDED_BY(mu_);
  std::list<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);                  // in arrival order
  absl::flat_hash_map<std::string, int> held_ ABSL_GUARDED_BY(mu_);  // by share, nonzero only
  absl::flat_hash_map<std::string, LastServed> last_served_ ABSL_GUARDED_BY(mu_);
  uint64_t grants_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_FAIR_SHARE_H_
