#include "backends/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"

namespace uopd {
namespace {

// dlsym for a versioned driver entry point.
template <typename Fn>
bool Resolve(void* library, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  return *out != nullptr;
}

absl::StatusOr<const CudaDriver*> LoadOnce() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("no CUDA driver: ", dlerror()));
  }
  auto* d = new CudaDriver;  // lives as long as the process, as the library does
  const char* missing = nullptr;
#define UOPD_RESOLVE(field, symbol) \
  if (missing == nullptr && !Resolve(library, symbol, &d->field)) missing = symbol
  UOPD_RESOLVE(Init, "cuInit");
  UOPD_RESOLVE(GetErrorString, "cuGetErrorString");
  UOPD_RESOLVE(DeviceGetCount, "cuDeviceGetCount");
  UOPD_RESOLVE(DeviceGet, "cuDeviceGet");
  UOPD_RESOLVE(DeviceGetAttribute, "cuDeviceGetAttribute");
  UOPD_RESOLVE(DeviceGetName, "cuDeviceGetName");
  UOPD_RESOLVE(DeviceTotalMem, "cuDeviceTotalMem_v2");
  UOPD_RESOLVE(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  UOPD_RESOLVE(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  UOPD_RESOLVE(CtxSetCurrent, "cuCtxSetCurrent");
  UOPD_RESOLVE(MemAlloc, "cuMemAlloc_v2");
  UOPD_RESOLVE(MemFree, "cuMemFree_v2");
  UOPD_RESOLVE(MemsetD8, "cuMemsetD8_v2");
  UOPD_RESOLVE(MemcpyHtoD, "cuMemcpyHtoD_v2");
  UOPD_RESOLVE(MemcpyDtoH, "cuMemcpyDtoH_v2");
  UOPD_RESOLVE(MemcpyDtoD, "cuMemcpyDtoD_v2");
  UOPD_RESOLVE(MemsetD8Async, "cuMemsetD8Async");
  UOPD_RESOLVE(CtxSynchronize, "cuCtxSynchronize");
  UOPD_RESOLVE(ModuleLoadData, "cuModuleLoadData");
  UOPD_RESOLVE(ModuleUnload, "cuModuleUnload");
  UOPD_RESOLVE(ModuleGetFunction, "cuModuleGetFunction");
  UOPD_RESOLVE(LaunchKernel, "cuLaunchKernel");
  UOPD_RESOLVE(StreamCreate, "cuStreamCreate");
  UOPD_RESOLVE(StreamDestroy, "cuStreamDestroy_v2");
  UOPD_RESOLVE(StreamSynchronize, "cuStreamSynchronize");
  UOPD_RESOLVE(StreamWaitEvent, "cuStreamWaitEvent");
  UOPD_RESOLVE(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  UOPD_RESOLVE(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  UOPD_RESOLVE(EventCreate, "cuEventCreate");
  UOPD_RESOLVE(EventDestroy, "cuEventDestroy_v2");
  UOPD_RESOLVE(EventRecord, "cuEventRecord");
  if (!Resolve(library, "cuEventElapsedTime_v2", &d->EventElapsedTime)) {
    UOPD_RESOLVE(EventElapsedTime, "cuEventElapsedTime");  // drivers before CUDA 12.8
  }
#undef UOPD_RESOLVE
  if (missing != nullptr) {
    delete d;
    return absl::FailedPreconditionError(absl::StrCat("the CUDA driver lacks ", missing));
  }
  CUresult result = d->Init(0);
  if (result != CUDA_SUCCESS) {
    const char* text = nullptr;
    d->GetErrorString(result, &text);
    delete d;
    return absl::FailedPreconditionError(
        absl::StrCat("cuInit failed: ", text != nullptr ? text : "unknown error"));
  }
  return d;
}

}  // namespace

absl::StatusOr<const CudaDriver*> CudaDriver::Load() {
  static absl::StatusOr<const CudaDriver*>* loaded = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { loaded = new absl::StatusOr<const CudaDriver*>(LoadOnce()); });
  return *loaded;
}

absl::Status CudaDriver::Check(CUresult result, absl::string_view what,
                               absl::StatusCode code) const {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const char* text = nullptr;
  GetErrorString(result, &text);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) code = absl::StatusCode::kResourceExhausted;
  return absl::Status(code,
                      absl::StrCat(what, ": ", text != nullptr ? text : "CUDA error ",
                                   text != nullptr ? "" : absl::StrCat(static_cast<int>(result))));
}

}  // namespace uopd
