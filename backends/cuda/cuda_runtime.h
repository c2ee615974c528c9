// The CUDA device's allocator and runtime on top of the dynamically loaded driver: device
// memory (plain cuMemAlloc allocations), modules loaded from CUBIN with a PTX fallback, single
// launches on a stream per call (so concurrent calls overlap), and launch queues for plans.
//
// Every copy, memset and launch goes to a non-blocking stream and is waited for on that stream:
// the legacy default stream does not order work against non-blocking streams, and a plain
// cuMemcpyHtoD may return before its DMA lands.
#ifndef UOPD_BACKENDS_CUDA_CUDA_RUNTIME_H_
#define UOPD_BACKENDS_CUDA_CUDA_RUNTIME_H_

#include <atomic>
#include <functional>
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

  // A stream and a device status word for one launch or copy. Reused across launches (creating
  // them costs more than a small kernel), one per call in flight, so concurrent calls never
  // share. The status word is zero whenever the slot is free.
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
  // Runs `work` on a launch slot's stream and waits for it.
  absl::Status OnStream(const std::function<absl::Status(CUstream)>& work);

  std::shared_ptr<CudaContext> context_;
  std::atomic<int64_t> in_use_{0};
};

// A loaded module and its kernel. Safe for concurrent use.
class CudaProgram : public Program {
 public:
  CudaProgram(std::shared_ptr<CudaContext> context, CUmodule module, CUfunction function,
              const ProgramSpec& spec);
  ~CudaProgram() override;
  // A launched grid runs to completion: `stop` is not read.
  absl::Status Execute(absl::Span<void* const> buffers, absl::Span<const int64_t> vals,
                       const LaunchDims& dims, const StopFlag* stop) const override;

  const CudaContext& context() const { return *context_; }
  const std::string& name() const { return name_; }
  // Enqueues the kernel on `stream` with `status` as its status word; zero-sized grids do
  // nothing.
  absl::Status Launch(CUstream stream, CUdeviceptr status, absl::Span<void* const> buffers,
                      absl::Span<const int64_t> vals, const LaunchDims& dims) const;

 private:
  std::shared_ptr<CudaContext> context_;
  CUmodule module_;
  CUfunction function_;
  std::string name_;
  // The kernel's parameters are positional: a wrong count would shift every one after it.
  size_t buffer_count_;
  size_t var_count_;
};

// The OUT_OF_RANGE error for a kernel whose status word says `code` (the slot + 1).
absl::Status BoundsCheckFailed(const std::string& kernel, int code);

// Safe for concurrent use.
class CudaRuntime : public RuntimeFactory {
 public:
  explicit CudaRuntime(std::shared_ptr<CudaContext> context) : context_(std::move(context)) {}
  absl::StatusOr<std::shared_ptr<Program>> Load(const CompiledKernel& kernel,
                                                const ProgramSpec& spec) override;
  absl::StatusOr<std::unique_ptr<LaunchQueue>> NewLaunchQueue() override;

 private:
  std::shared_ptr<CudaContext> context_;
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_CUDA_RUNTIME_H_
