// CpuAllocator: host memory for CPU buffers, zero-filled and 64-byte aligned.
#ifndef UOPD_BACKENDS_CPU_CPU_ALLOCATOR_H_
#define UOPD_BACKENDS_CPU_CPU_ALLOCATOR_H_

#include <atomic>

#include "core/device/allocator.h"

namespace uopd {

// Safe for concurrent use. Fresh memory is zeroed so no client sees another's old data, and
// every allocation has room for at least one element of any type (masked loads may read
// element 0 of a buffer and discard it).
class CpuAllocator : public Allocator {
 public:
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  absl::Status CopyIn(void* dst, const void* host_src, size_t bytes) override;
  absl::Status CopyOut(void* host_dst, const void* src, size_t bytes) override;
  int64_t bytes_in_use() const override { return in_use_.load(); }

 private:
  std::atomic<int64_t> in_use_{0};
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_CPU_ALLOCATOR_H_
