// The CUDA devices of this machine, and compile-only CUDA compilers for explicit targets.
#ifndef UOPD_BACKENDS_CUDA_CUDA_DEVICE_H_
#define UOPD_BACKENDS_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device/device.h"

namespace uopd {

// One Device per GPU the driver reports ("CUDA:0", ...). FAILED_PRECONDITION, saying why, when
// there is no usable driver or GPU; the daemon then serves without CUDA devices.
// `wrap_compiler` (if set) wraps each NVRTC compiler, e.g. to run it in sandboxed workers.
absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateCudaDevices(
    const CompilerWrapper& wrap_compiler = nullptr);

// A CUDA renderer and an NVRTC compiler for `arch` ("sm_90"), for compiling without a GPU.
absl::StatusOr<CompilerPair> CreateCudaCompilerPair(const std::string& arch,
                                                    const CompilerWrapper& wrap_compiler = nullptr);

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_CUDA_DEVICE_H_
