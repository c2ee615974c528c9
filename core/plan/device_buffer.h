// DeviceBuffer and BufferView: device memory with an owner, and typed windows onto it.
//
// A DeviceBuffer is one allocation on one device, freed when the last reference goes. A
// BufferView is what kernels bind to: (storage, byte offset, dtype, element count). Views of the
// same DeviceBuffer share storage, which is what execution plans track dependencies on.
#ifndef UOPD_CORE_PLAN_DEVICE_BUFFER_H_
#define UOPD_CORE_PLAN_DEVICE_BUFFER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/device/device.h"

namespace uopd {

// Immutable handle (the bytes it points to are not): safe to share across threads.
class DeviceBuffer {
 public:
  // Allocates `bytes` on `device` (zero-filled by the allocator).
  static absl::StatusOr<std::shared_ptr<DeviceBuffer>> Create(Device& device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  Device& device() const { return device_; }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  DeviceBuffer(Device& device, void* data, size_t bytes)
      : device_(device), data_(data), bytes_(bytes) {}
  Device& device_;
  void* data_;
  size_t bytes_;
};

struct BufferView {
  std::shared_ptr<DeviceBuffer> storage;
  size_t offset = 0;  // bytes into storage
  Scalar dtype = Scalar::kUint8;
  int64_t size = 0;  // elements

  size_t bytes() const { return static_cast<size_t>(size) * ScalarItemSize(dtype); }
  void* data() const { return static_cast<char*>(storage->data()) + offset; }

  // Copies `length` bytes between host memory and the view's bytes from `at` on, through its
  // device's allocator (a GPU's copy crosses the bus); OUT_OF_RANGE, copying nothing, unless
  // [at, at + length) lies within the view.
  absl::Status CopyIn(int64_t at, const void* from, int64_t length) const;
  absl::Status CopyOut(int64_t at, void* to, int64_t length) const;

  // The whole of `storage` as `dtype` (its byte size must be a multiple of the item size).
  static absl::StatusOr<BufferView> Whole(std::shared_ptr<DeviceBuffer> storage, Scalar dtype);
  // A window of `size` elements of `dtype` starting `offset` bytes into `base`'s storage,
  // relative to `base`'s own offset. OUT_OF_RANGE if it does not fit; INVALID_ARGUMENT if the
  // offset is not a multiple of the item size.
  static absl::StatusOr<BufferView> Of(const BufferView& base, size_t offset, Scalar dtype,
                                       int64_t size);
};

// OK when [offset, offset + length) lies within [0, total) without overflowing; OUT_OF_RANGE
// naming the range otherwise. Every offset a client sends goes through it: `offset + length`
// written out wraps for offsets near 2^63 and passes a naive check.
absl::Status CheckByteRange(int64_t offset, int64_t length, int64_t total);

}  // namespace uopd

#endif  // UOPD_CORE_PLAN_DEVICE_BUFFER_H_
