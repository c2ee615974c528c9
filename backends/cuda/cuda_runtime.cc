#include "backends/cuda/cuda_runtime.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_launch_queue.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

CUdeviceptr Ptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
constexpr size_t kMinAllocation = 256;
constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;  // every GPU since compute capability 3.0
constexpr int64_t kMaxGridYZ = 65535;

}  // namespace

absl::Status BoundsCheckFailed(const std::string& kernel, int code) {
  return absl::OutOfRangeError(absl::StrCat("kernel ", kernel,
                                            ": run-time bounds check failed on buffer slot ",
                                            code - 1, "; the kernel was stopped"));
}

CudaProgram::CudaProgram(std::shared_ptr<CudaContext> context, CUmodule module, CUfunction function,
                         const ProgramSpec& spec)
    : context_(std::move(context)),
      module_(module),
      function_(function),
      name_(spec.name),
      buffer_count_(static_cast<size_t>(spec.buf_count)),
      var_count_(spec.var_names.size()) {}

CudaProgram::~CudaProgram() {
  if (context_->MakeCurrent().ok()) context_->driver().ModuleUnload(module_);
}

absl::Status CudaProgram::Launch(CUstream stream, CUdeviceptr status,
                                 absl::Span<void* const> buffers, absl::Span<const int64_t> vals,
                                 const LaunchDims& dims) const {
  if (buffers.size() != buffer_count_ || vals.size() != var_count_) {
    return absl::InvalidArgumentError(absl::StrCat("kernel ", name_, " takes ", buffer_count_,
                                                   " buffers and ", var_count_, " values, not ",
                                                   buffers.size(), " and ", vals.size()));
  }
  if (dims.global[0] == 0 || dims.global[1] == 0 || dims.global[2] == 0) return absl::OkStatus();
  // The driver takes 32-bit sizes: a grid past the GPU's limits must fail, not wrap and run part.
  if (dims.global[0] > kMaxGridX || dims.global[1] > kMaxGridYZ || dims.global[2] > kMaxGridYZ) {
    return absl::OutOfRangeError(absl::StrCat("kernel ", name_, ": a grid of ", dims.global[0],
                                              " x ", dims.global[1], " x ", dims.global[2],
                                              " blocks is past the GPU's limits"));
  }
  const CudaDriver& d = context_->driver();
  std::vector<CUdeviceptr> pointers(buffers.size());
  std::vector<long long> values(vals.begin(), vals.end());
  std::vector<void*> params;
  params.reserve(buffers.size() + values.size() + 1);
  for (size_t i = 0; i < buffers.size(); ++i) {
    pointers[i] = Ptr(buffers[i]);
    params.push_back(&pointers[i]);
  }
  for (long long& v : values) params.push_back(&v);
  params.push_back(&status);
  return d.Check(
      d.LaunchKernel(function_, static_cast<unsigned>(dims.global[0]),
                     static_cast<unsigned>(dims.global[1]), static_cast<unsigned>(dims.global[2]),
                     static_cast<unsigned>(dims.local[0]), static_cast<unsigned>(dims.local[1]),
                     static_cast<unsigned>(dims.local[2]), 0, stream, params.data(), nullptr),
      absl::StrCat("launching kernel ", name_));
}

absl::Status CudaProgram::Execute(absl::Span<void* const> buffers, absl::Span<const int64_t> vals,
                                  const LaunchDims& dims, const StopFlag* /*stop*/) const {
  const CudaDriver& d = context_->driver();
  UOPD_RETURN_IF_ERROR(context_->MakeCurrent());
  UOPD_ASSIGN_OR_RETURN(CudaContext::LaunchSlot slot, context_->AcquireSlot());
  absl::Status result = [&]() -> absl::Status {
    UOPD_RETURN_IF_ERROR(Launch(slot.stream, slot.status, buffers, vals, dims));
    int code = 0;
    UOPD_RETURN_IF_ERROR(d.Check(d.MemcpyDtoHAsync(&code, slot.status, sizeof(int), slot.stream),
                                 "reading the status word"));
    UOPD_RETURN_IF_ERROR(d.Wait(slot.stream, absl::StrCat("running kernel ", name_)));
    if (code == 0) return absl::OkStatus();
    // Free slots keep a zero status word.
    UOPD_RETURN_IF_ERROR(d.Check(d.MemsetD8Async(slot.status, 0, sizeof(int), slot.stream),
                                 "clearing the status word"));
    UOPD_RETURN_IF_ERROR(d.Wait(slot.stream, "clearing the status word"));
    return BoundsCheckFailed(name_, code);
  }();
  // A slot whose stream failed may hold an unknown status word: it is not reused.
  if (result.ok() || absl::IsOutOfRange(result)) context_->ReleaseSlot(slot);
  return result;
}

absl::StatusOr<std::shared_ptr<CudaContext>> CudaContext::Create(const CudaDriver& driver,
                                                                 int ordinal) {
  std::shared_ptr<CudaContext> ctx(new CudaContext(driver, ordinal));
  UOPD_RETURN_IF_ERROR(driver.Check(driver.DeviceGet(&ctx->device_, ordinal), "cuDeviceGet",
                                    absl::StatusCode::kFailedPrecondition));
  int major = 0, minor = 0;
  UOPD_RETURN_IF_ERROR(driver.Check(
      driver.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx->device_),
      "attribute"));
  UOPD_RETURN_IF_ERROR(driver.Check(
      driver.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx->device_),
      "attribute"));
  ctx->arch_ = absl::StrCat("sm_", major, minor);
  char name[256] = {};
  driver.DeviceGetName(name, sizeof(name), ctx->device_);
  ctx->name_ = name;
  size_t total = 0;
  driver.DeviceTotalMem(&total, ctx->device_);
  ctx->total_memory_ = static_cast<int64_t>(total);
  UOPD_RETURN_IF_ERROR(driver.Check(driver.PrimaryCtxRetain(&ctx->context_, ctx->device_),
                                    "retaining the primary context",
                                    absl::StatusCode::kFailedPrecondition));
  return ctx;
}

CudaContext::~CudaContext() {
  if (context_ == nullptr) return;
  if (MakeCurrent().ok()) {
    absl::MutexLock lock(&mu_);
    for (const LaunchSlot& slot : all_slots_) {
      driver_.StreamDestroy(slot.stream);
      driver_.MemFree(slot.status);
    }
  }
  driver_.PrimaryCtxRelease(device_);
}

absl::StatusOr<CudaContext::LaunchSlot> CudaContext::AcquireSlot() const {
  {
    absl::MutexLock lock(&mu_);
    if (!free_slots_.empty()) {
      LaunchSlot slot = free_slots_.back();
      free_slots_.pop_back();
      return slot;
    }
  }
  LaunchSlot slot;
  UOPD_RETURN_IF_ERROR(driver_.Check(driver_.StreamCreate(&slot.stream, CU_STREAM_NON_BLOCKING),
                                     "creating a stream"));
  absl::Status s =
      driver_.Check(driver_.MemAlloc(&slot.status, sizeof(int)), "allocating a status word");
  if (s.ok()) {
    s = driver_.Check(driver_.MemsetD8Async(slot.status, 0, sizeof(int), slot.stream),
                      "clearing a status word");
    if (s.ok()) s = driver_.Wait(slot.stream, "clearing a status word");
    if (!s.ok()) driver_.MemFree(slot.status);
  }
  if (!s.ok()) {
    driver_.StreamDestroy(slot.stream);
    return s;
  }
  absl::MutexLock lock(&mu_);
  all_slots_.push_back(slot);
  return slot;
}

void CudaContext::ReleaseSlot(LaunchSlot slot) const {
  absl::MutexLock lock(&mu_);
  free_slots_.push_back(slot);
}

absl::Status CudaContext::MakeCurrent() const {
  return driver_.Check(driver_.CtxSetCurrent(context_), "cuCtxSetCurrent",
                       absl::StatusCode::kUnavailable);
}

absl::StatusOr<void*> CudaAllocator::Allocate(size_t bytes) {
  const CudaDriver& d = context_->driver();
  UOPD_RETURN_IF_ERROR(context_->MakeCurrent());
  size_t size = std::max(bytes, kMinAllocation);
  CUdeviceptr ptr = 0;
  UOPD_RETURN_IF_ERROR(
      d.Check(d.MemAlloc(&ptr, size), absl::StrCat("allocating ", bytes, " bytes on the GPU")));
  absl::Status zeroed = OnStream([&](CUstream stream) {
    return d.Check(d.MemsetD8Async(ptr, 0, size, stream), "zeroing a new buffer");
  });
  if (!zeroed.ok()) {
    d.MemFree(ptr);
    return zeroed;
  }
  in_use_.fetch_add(static_cast<int64_t>(size));
  return reinterpret_cast<void*>(ptr);
}

void CudaAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr || !context_->MakeCurrent().ok()) return;
  context_->driver().MemFree(Ptr(ptr));
  in_use_.fetch_sub(static_cast<int64_t>(std::max(bytes, kMinAllocation)));
}

absl::Status CudaAllocator::CopyIn(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  const CudaDriver& d = context_->driver();
  return OnStream([&](CUstream stream) {
    return d.Check(d.MemcpyHtoDAsync(Ptr(dst), host_src, bytes, stream), "copy to the GPU");
  });
}

absl::Status CudaAllocator::CopyOut(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  const CudaDriver& d = context_->driver();
  return OnStream([&](CUstream stream) {
    return d.Check(d.MemcpyDtoHAsync(host_dst, Ptr(src), bytes, stream), "copy from the GPU");
  });
}

absl::Status CudaAllocator::OnStream(const std::function<absl::Status(CUstream)>& work) {
  UOPD_RETURN_IF_ERROR(context_->MakeCurrent());
  UOPD_ASSIGN_OR_RETURN(CudaContext::LaunchSlot slot, context_->AcquireSlot());
  absl::Status status = work(slot.stream);
  if (status.ok()) status = context_->driver().Wait(slot.stream, "waiting for a copy");
  if (status.ok()) context_->ReleaseSlot(slot);
  return status;
}

absl::StatusOr<std::unique_ptr<LaunchQueue>> CudaRuntime::NewLaunchQueue() {
  UOPD_ASSIGN_OR_RETURN(auto queue, CudaLaunchQueue::Create(context_));
  return std::unique_ptr<LaunchQueue>(std::move(queue));
}

absl::StatusOr<std::shared_ptr<Program>> CudaRuntime::Load(const CompiledKernel& kernel,
                                                           const ProgramSpec& spec) {
  const CudaDriver& d = context_->driver();
  UOPD_RETURN_IF_ERROR(context_->MakeCurrent());
  CUmodule module = nullptr;
  CUresult loaded = d.ModuleLoadData(&module, kernel.bytes.data());
  if (loaded != CUDA_SUCCESS && !kernel.ptx.empty()) {
    // A CUBIN for another architecture: let the driver JIT the PTX.
    std::string ptx = kernel.ptx;  // NUL-terminated for the driver
    loaded = d.ModuleLoadData(&module, ptx.c_str());
  }
  UOPD_RETURN_IF_ERROR(d.Check(loaded, absl::StrCat("loading kernel ", spec.name)));
  CUfunction function = nullptr;
  if (absl::Status found = d.Check(d.ModuleGetFunction(&function, module, kernel.entry.c_str()),
                                   absl::StrCat("finding ", kernel.entry));
      !found.ok()) {
    d.ModuleUnload(module);
    return found;
  }
  return std::make_shared<CudaProgram>(context_, module, function, spec);
}

}  // namespace uopd
