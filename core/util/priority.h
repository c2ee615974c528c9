// The CPU priority compile work runs at: the compile workers and the daemon's compile threads
// (optimize, search, render) are both set from one CompilePriority, read once at start.
#ifndef UOPD_CORE_UTIL_PRIORITY_H_
#define UOPD_CORE_UTIL_PRIORITY_H_

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "absl/time/time.h"

namespace uopd {

// How compile work yields to the daemon's short calls (Execute, cache hits, copies).
struct CompilePriority {
  // Added to the process's nice value for all compile work (--compile_nice; 0: the daemon's).
  int nice = 0;
  // Compile work still running after this long is demoted, as a multilevel feedback queue
  // demotes a long job: made `demoted_nice` nicer again (--compile_demote_after; zero: never).
  // Real kernels compile in milliseconds; a kernel that takes seconds then takes the CPU other
  // callers leave rather than a core of theirs. Priority cannot be raised again without
  // privilege, so demoted work stays demoted until it ends.
  absl::Duration demote_after = absl::Milliseconds(250);
  int demoted_nice = 10;
};

// The nice value `nicer` above this process's own, at most 19 (the lowest priority); nullopt
// when `nicer` is not positive or the process's own cannot be read.
inline std::optional<int> NiceAboveThisProcess(int nicer) {
  if (nicer <= 0) return std::nullopt;
  errno = 0;
  const int base = getpriority(PRIO_PROCESS, 0);
  if (errno != 0) return std::nullopt;
  return std::min(19, base + nicer);
}

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_PRIORITY_H_
