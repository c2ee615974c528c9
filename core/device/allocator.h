// Allocator: device memory for buffers, and copies between it and the host.
#ifndef UOPD_CORE_DEVICE_ALLOCATOR_H_
#define UOPD_CORE_DEVICE_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace uopd {

// Implementations are safe for concurrent use.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns the device address of `bytes` fresh bytes (zero bytes gives a valid, unique address).
  // RESOURCE_EXHAUSTED when the device is out of memory.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  // REQUIRES: `ptr` came from Allocate on this allocator and is not in use by a running kernel.
  virtual void Free(void* ptr, size_t bytes) = 0;
  virtual absl::Status CopyIn(void* dst, const void* host_src, size_t bytes) = 0;
  virtual absl::Status CopyOut(void* host_dst, const void* src, size_t bytes) = 0;
  // Bytes currently allocated.
  virtual int64_t bytes_in_use() const = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_ALLOCATOR_H_
