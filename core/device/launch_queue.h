// LaunchQueue: kernels of one device submitted in order and run asynchronously, each after the
// kernels it must follow, with one wait at the end. Devices whose runtime offers one (CUDA:
// streams joined by events) run plans through it instead of one synchronous Execute per kernel.
#ifndef UOPD_CORE_DEVICE_LAUNCH_QUEUE_H_
#define UOPD_CORE_DEVICE_LAUNCH_QUEUE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/device/program_spec.h"

namespace uopd {

class Program;

// When a kernel ran, in nanoseconds from the start of the run, as the device measured it.
struct KernelTime {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// One run at a time: not safe for concurrent use (a plan owns its queue and serializes runs).
class LaunchQueue {
 public:
  virtual ~LaunchQueue() = default;

  // Submits kernel `index` (0, 1, 2... within a run) to start once every kernel in `after`
  // (earlier indices) has finished. Arguments are as for Program::Execute, whose runtime must
  // be the one that made this queue. An error means it was not submitted; Finish must still be
  // called to end the run.
  virtual absl::Status Submit(int index, const Program& program, absl::Span<void* const> buffers,
                              absl::Span<const int64_t> vals, const LaunchDims& dims,
                              absl::Span<const int> after) = 0;

  // Waits for everything submitted since the last Finish and ends the run. When run-time bounds
  // checks failed, OUT_OF_RANGE for the first such kernel by index, with `*failed_index` set
  // (kernels that did not depend on it may have run too). `times` gets one entry per submitted
  // kernel.
  virtual absl::Status Finish(std::vector<KernelTime>* times, int* failed_index) = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_LAUNCH_QUEUE_H_
