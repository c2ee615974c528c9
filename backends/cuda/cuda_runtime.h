// The CUDA device's allocator and runtime on top of the dynamically loaded driver: device
// memory (plain cuMemAlloc allocations), modules loaded from CUBIN with a PTX fallback, and
// launches on a stream per call, so kernels that plans run at the same time overlap.
#ifndef UOPD_BACKENDS_CUDA_CUDA_RUNTIME_H_
#define UOPD_BACKENDS_CUDA_CUDA_RUNTIME_H_

#include <atomic>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "backends/cuda/cuda_driver.h"
#include "core/device/allocator.h"
#include "core/device/runtime.h"

namespace uopd {

// One GPU's primary context. Immutable: safe for concurrent use.
class CudaContext {
 public:
  static absl::StatusOr<std::shared_ptr<CudaContext>> Create(const CudaDriver& driver, int ordinal);
  ~CudaContext();

  const CudaDriver& driver() const { return driver_; }
  // Makes the context current on the calling thread (cheap; needed once per thread and call).
  absl::Status MakeCurrent() const;
  int ordinal() const { return ordinal_; }
  const std::string& arch() const { return arch_; }  // "sm_90"
  const std::string& name() const { return name_; }
  int64_t total_memory() const { return total_memory_; }

  // A stream and a device status word for one launch. Reused across launches (creating them
  // costs more than a small kernel), one per launch in flight, so concurrent runs never share.
  struct LaunchSlot {
    CUstream stream = nullptr;
    CUdeviceptr status = 0;
  };
  absl::StatusOr<LaunchSlot> AcquireSlot() const;
  void ReleaseSlot(LaunchSlot slot) const;

 private:
  CudaContext(const CudaDriver& driver, int ordinal) : driver_(driver), ordinal_(ordinal) {}
  mutable absl::Mutex mu_;
  mutable std::vector<LaunchSlot> free_slots_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<LaunchSlot> all_slots_ ABSL_GUARDED_BY(mu_);
  const CudaDriver& driver_;
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string arch_, name_;
  int64_t total_memory_ = 0;
};

// Safe for concurrent use.
class CudaAllocator : public Allocator {
 public:
  explicit CudaAllocator(std::shared_ptr<CudaContext> context) : context_(std::move(context)) {}
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  absl::Status CopyIn(void* dst, const void* host_src, size_t bytes) override;
  absl::Status CopyOut(void* host_dst, const void* src, size_t bytes) override;
  int64_t bytes_in_use() const override { return in_use_.load(); }

 private:
  std::shared_ptr<CudaContext> context_;
  std::atomic<int64_t> in_use_{0};
};

// Safe for concurrent use.
class CudaRuntime : public RuntimeFactory {
 public:
  explicit CudaRuntime(std::shared_ptr<CudaContext> context) : context_(std::move(context)) {}
  absl::StatusOr<std::shared_ptr<Program>> Load(const CompiledKernel& kernel,
                                                const ProgramSpec& spec) override;

 private:
  std::shared_ptr<CudaContext> context_;
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_CUDA_RUNTIME_H_
