// CudaDriver: the CUDA driver API, loaded with dlopen("libcuda.so.1") at run time. uopd never
// links libcuda, so one binary runs on machines with and without a GPU.
#ifndef UOPD_BACKENDS_CUDA_CUDA_DRIVER_H_
#define UOPD_BACKENDS_CUDA_CUDA_DRIVER_H_

#include <cuda.h>

#include <string>

#include "absl/status/statusor.h"

namespace uopd {

// Immutable after Load: safe for concurrent use (the driver API itself is thread safe).
struct CudaDriver {
  // cuda.h maps these names to their current versions (cuMemAlloc -> cuMemAlloc_v2), and
  // decltype follows, so each pointer has the signature of the symbol it is loaded from.
  decltype(&cuInit) Init = nullptr;
  decltype(&cuGetErrorString) GetErrorString = nullptr;
  decltype(&cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&cuDeviceGet) DeviceGet = nullptr;
  decltype(&cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&cuDeviceTotalMem) DeviceTotalMem = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&cuDevicePrimaryCtxRelease) PrimaryCtxRelease = nullptr;
  decltype(&cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&cuMemAlloc) MemAlloc = nullptr;
  decltype(&cuMemFree) MemFree = nullptr;
  decltype(&cuMemsetD8) MemsetD8 = nullptr;
  decltype(&cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&cuMemcpyDtoD) MemcpyDtoD = nullptr;
  decltype(&cuMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&cuModuleUnload) ModuleUnload = nullptr;
  decltype(&cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&cuStreamCreate) StreamCreate = nullptr;
  decltype(&cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&cuStreamWaitEvent) StreamWaitEvent = nullptr;
  decltype(&cuMemcpyHtoDAsync) MemcpyHtoDAsync = nullptr;
  decltype(&cuMemcpyDtoHAsync) MemcpyDtoHAsync = nullptr;
  decltype(&cuEventCreate) EventCreate = nullptr;
  decltype(&cuEventDestroy) EventDestroy = nullptr;
  decltype(&cuEventRecord) EventRecord = nullptr;
  decltype(&cuEventElapsedTime) EventElapsedTime = nullptr;

  // Loads the library and every symbol, and calls cuInit. FAILED_PRECONDITION saying why when
  // there is no usable driver (no libcuda.so.1, no symbol, cuInit failing: no GPU).
  static absl::StatusOr<const CudaDriver*> Load();

  // OK, or `code` with the driver's name for `result` and `what` was being done.
  absl::Status Check(CUresult result, absl::string_view what,
                     absl::StatusCode code = absl::StatusCode::kInternal) const;
  // Waits for everything queued on `stream`; a failure says `what` was being waited for.
  absl::Status Wait(CUstream stream, absl::string_view what) const {
    return Check(StreamSynchronize(stream), what);
  }
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_CUDA_DRIVER_H_
