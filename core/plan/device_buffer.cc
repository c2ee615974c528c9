#include "core/plan/device_buffer.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<std::shared_ptr<DeviceBuffer>> DeviceBuffer::Create(Device& device, size_t bytes) {
  UOPD_ASSIGN_OR_RETURN(void* data, device.allocator().Allocate(bytes));
  return std::shared_ptr<DeviceBuffer>(new DeviceBuffer(device, data, bytes));
}

DeviceBuffer::~DeviceBuffer() { device_.allocator().Free(data_, bytes_); }

absl::StatusOr<BufferView> BufferView::Whole(std::shared_ptr<DeviceBuffer> storage, Scalar dtype) {
  int item = ScalarItemSize(dtype);
  if (item == 0 || storage->bytes() % item != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        storage->bytes(), " bytes are not a whole number of ", ScalarName(dtype), " elements"));
  }
  return BufferView{storage, 0, dtype, static_cast<int64_t>(storage->bytes() / item)};
}

absl::StatusOr<BufferView> BufferView::Of(const BufferView& base, size_t offset, Scalar dtype,
                                          int64_t size) {
  int item = ScalarItemSize(dtype);
  if (item == 0 || size < 0)
    return absl::InvalidArgumentError("a view needs a value dtype and size >= 0");
  if (offset % item != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("view offset ", offset, " is not a multiple of the item size ", item));
  }
  // Divided, not multiplied: size * item overflows for sizes near 2^61.
  if (offset > base.bytes() || static_cast<uint64_t>(size) > (base.bytes() - offset) / item) {
    return absl::OutOfRangeError(absl::StrCat("a view of ", size, " ", ScalarName(dtype),
                                              " elements at byte ", offset, " does not fit in ",
                                              base.bytes(), " bytes"));
  }
  return BufferView{base.storage, base.offset + offset, dtype, size};
}

absl::Status CheckByteRange(int64_t offset, int64_t length, int64_t total) {
  if (offset < 0 || length < 0 || offset > total || length > total - offset) {
    return absl::OutOfRangeError(absl::StrCat("the range of ", length, " bytes at offset ", offset,
                                              " is outside the buffer's ", total, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status BufferView::CopyIn(int64_t at, const void* from, int64_t length) const {
  if (absl::Status in = CheckByteRange(at, length, static_cast<int64_t>(bytes())); !in.ok()) {
    return in;
  }
  return storage->device().allocator().CopyIn(static_cast<char*>(data()) + at, from,
                                              static_cast<size_t>(length));
}

absl::Status BufferView::CopyOut(int64_t at, void* to, int64_t length) const {
  if (absl::Status in = CheckByteRange(at, length, static_cast<int64_t>(bytes())); !in.ok()) {
    return in;
  }
  return storage->device().allocator().CopyOut(to, static_cast<const char*>(data()) + at,
                                               static_cast<size_t>(length));
}

}  // namespace uopd
