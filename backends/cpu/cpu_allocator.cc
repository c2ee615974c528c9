#include "backends/cpu/cpu_allocator.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace uopd {
namespace {
constexpr size_t kAlignment = 64;
size_t Rounded(size_t bytes) {
  return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
}
}  // namespace

absl::StatusOr<void*> CpuAllocator::Allocate(size_t bytes) {
  if (bytes > (size_t{1} << 46)) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  size_t size = Rounded(bytes);
  void* ptr = std::aligned_alloc(kAlignment, size);
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("out of host memory for ", bytes, " bytes"));
  }
  std::memset(ptr, 0, size);
  in_use_.fetch_add(static_cast<int64_t>(size));
  return ptr;
}

void CpuAllocator::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  std::free(ptr);
  in_use_.fetch_sub(static_cast<int64_t>(Rounded(bytes)));
}

absl::Status CpuAllocator::CopyIn(void* dst, const void* host_src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, host_src, bytes);
  return absl::OkStatus();
}

absl::Status CpuAllocator::CopyOut(void* host_dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(host_dst, src, bytes);
  return absl::OkStatus();
}

}  // namespace uopd
