// The CPU priority compile work runs at (--compile_nice): the compile workers and the daemon's
// compile threads are both set from this one reading of the process's own nice value.
#ifndef UOPD_CORE_UTIL_PRIORITY_H_
#define UOPD_CORE_UTIL_PRIORITY_H_

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <optional>

namespace uopd {

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
