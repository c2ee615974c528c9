// StopFlag: asks kernels that are running to stop. CPU kernels read it between chunks of their
// loops and return early; the run then fails with CANCELLED. GPU kernels run to completion (a
// launched grid cannot be recalled), and plans stop starting kernels once it is set.
//
// It travels with all the work done for one call, so it also says what that work may know of
// the call: its deadline, and whose quota the memory it takes for itself is charged to.
#ifndef UOPD_CORE_DEVICE_STOP_FLAG_H_
#define UOPD_CORE_DEVICE_STOP_FLAG_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace uopd {

// Safe for concurrent use; once stopped, stays stopped.
class StopFlag {
 public:
  void Stop() { flag_.store(1, std::memory_order_relaxed); }
  bool stopped() const { return flag_.load(std::memory_order_relaxed) != 0; }
  // When the flag will be set at the latest (the call's deadline), for work that budgets its
  // time (a search leaves the rest of the call time to run what it found). Set before the
  // flag is shared.
  void set_deadline(std::chrono::system_clock::time_point deadline) { deadline_ = deadline; }
  std::chrono::system_clock::time_point deadline() const { return deadline_; }
  // The word compiled kernels poll (a 32-bit integer, nonzero once stopped).
  const std::atomic<int32_t>* word() const { return &flag_; }

  // Memory the work takes for itself on the call's behalf (the scratch buffers a search or a
  // timing of candidates runs kernels on, with their host copies) is charged through this to
  // whoever the call acts for: it returns what holds the charge until destroyed, or
  // RESOURCE_EXHAUSTED. Set before the flag is shared; without one nothing is charged.
  using ScratchCharger = std::function<absl::StatusOr<std::shared_ptr<const void>>(int64_t)>;
  void set_scratch_charger(ScratchCharger charger) { charger_ = std::move(charger); }

  // Whose turn the work takes in queues shared by all callers (the caller's quota key): the
  // compile workers go to the caller with the fewest compiles running first, so one caller's
  // slow compiles cannot hold every worker while another waits. Set before the flag is shared.
  void set_share(std::string share) { share_ = std::move(share); }
  const std::string& share() const { return share_; }
  absl::StatusOr<std::shared_ptr<const void>> ChargeScratch(int64_t bytes) const {
    if (!charger_) return std::shared_ptr<const void>();
    return charger_(bytes);
  }

 private:
  std::atomic<int32_t> flag_{0};
  std::chrono::system_clock::time_point deadline_ = std::chrono::system_clock::time_point::max();
  ScratchCharger charger_;
  std::string share_;
};

// CANCELLED saying what was abandoned once `stop` (may be null) is set, OK before: for work
// between its phases (decode, optimize, render) that a call which ended no longer wants.
inline absl::Status CheckNotStopped(const StopFlag* stop, absl::string_view abandoning) {
  if (stop == nullptr || !stop->stopped()) return absl::OkStatus();
  return absl::CancelledError(absl::StrCat("the call ended before ", abandoning));
}

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_STOP_FLAG_H_
