// CreateCpuDevice: the CPU Device (allocator, LLVM renderer and compiler, ORC runtime).
#ifndef UOPD_BACKENDS_CPU_CPU_DEVICE_H_
#define UOPD_BACKENDS_CPU_CPU_DEVICE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "backends/cpu/llvm_renderer.h"
#include "core/device/device.h"
#include "core/util/thread_pool.h"

namespace uopd {

struct CpuDeviceOptions {
  LlvmRendererOptions renderer;
  CompilerWrapper wrap_compiler;  // e.g. to compile in sandboxed workers; none when empty
};

// `pool` (may be null: single-threaded kernels) must outlive the device.
absl::StatusOr<std::unique_ptr<Device>> CreateCpuDevice(ThreadPool* pool,
                                                        const CpuDeviceOptions& options = {});

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_CPU_DEVICE_H_
