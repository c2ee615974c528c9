// libFuzzer target: the offset arithmetic of the buffer RPCs (WriteBuffer and ReadBuffer
// ranges, views of Execute and Prepare), on real allocations: whatever range the checks accept
// is then written, so ASan catches any range they let past a buffer's end.
#include <cstdint>
#include <cstring>
#include <optional>

#include "backends/cpu/cpu_device.h"
#include "core/plan/device_buffer.h"

namespace {

int64_t Take(const uint8_t*& data, size_t& size) {
  int64_t value = 0;
  const size_t n = size < sizeof(value) ? size : sizeof(value);
  std::memcpy(&value, data, n);
  data += n;
  size -= n;
  return value;
}

uopd::Device& Cpu() {
  static uopd::Device* device = uopd::CreateCpuDevice(nullptr)->release();
  return *device;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int64_t total = Take(data, size) & 4095;
  const int64_t offset = Take(data, size);
  const int64_t length = Take(data, size);
  const int64_t view_offset = Take(data, size);
  const int64_t view_size = Take(data, size);
  const int dtype = static_cast<int>(Take(data, size) & 31);
  auto storage = uopd::DeviceBuffer::Create(Cpu(), static_cast<size_t>(total));
  if (!storage.ok()) return 0;
  auto whole = uopd::BufferView::Whole(*storage, uopd::Scalar::kUint8);
  if (!whole.ok()) return 0;
  // A WriteBuffer chunk or a ReadBuffer range.
  if (uopd::CheckByteRange(offset, length, total).ok()) {
    std::memset(static_cast<char*>(whole->data()) + offset, 0xab, static_cast<size_t>(length));
  }
  // A view of an Execute or Prepare request (offsets below zero are refused before this).
  const std::optional<uopd::Scalar> scalar = uopd::ScalarFromNumber(dtype);
  if (scalar && view_offset >= 0) {
    if (uopd::ScalarItemSize(*scalar) > 0) {
      auto view =
          uopd::BufferView::Of(*whole, static_cast<size_t>(view_offset), *scalar, view_size);
      if (view.ok()) std::memset(view->data(), 0xcd, view->bytes());
    }
  }
  return 0;
}
