// Program and RuntimeFactory: compiled bytes loaded into a device and made callable.
#ifndef UOPD_CORE_DEVICE_RUNTIME_H_
#define UOPD_CORE_DEVICE_RUNTIME_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/device/compiler.h"
#include "core/device/launch_queue.h"
#include "core/device/program_spec.h"
#include "core/device/stop_flag.h"

namespace uopd {

// A loaded kernel. Safe for concurrent use: Execute may be called from several threads, each
// with its own buffers.
class Program {
 public:
  virtual ~Program() = default;
  // Runs the kernel. `buffers[i]` is the device address of slot i (buf_count entries), `vals` the
  // values of var_names in order (runtime-only ones are filled in by the runtime), `dims` the
  // evaluated launch dimensions. Fails with OUT_OF_RANGE when a run-time bounds check fails
  // (naming the kernel and the buffer slot); no memory outside a buffer is touched. With `stop`
  // (may be null), fails with CANCELLED when a kernel that can be interrupted saw it set; the
  // outputs are then partly written.
  virtual absl::Status Execute(absl::Span<void* const> buffers, absl::Span<const int64_t> vals,
                               const LaunchDims& dims, const StopFlag* stop) const = 0;
};

class RuntimeFactory {
 public:
  virtual ~RuntimeFactory() = default;
  // Loads `kernel` (bytes produced by this device's compiler for `spec`).
  virtual absl::StatusOr<std::shared_ptr<Program>> Load(const CompiledKernel& kernel,
                                                        const ProgramSpec& spec) = 0;
  // A queue for asynchronous runs of this runtime's programs, or null where kernels run only
  // synchronously through Program::Execute (the CPU: a kernel is a call on a host thread).
  virtual absl::StatusOr<std::unique_ptr<LaunchQueue>> NewLaunchQueue() { return nullptr; }
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_RUNTIME_H_
