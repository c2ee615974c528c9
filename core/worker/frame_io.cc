#include "core/worker/frame_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace uopd {
namespace {

constexpr uint32_t kMaxParts = 64;
constexpr int kPollSliceMs = 5;
constexpr size_t kCoalesceBytes = 64 << 10;

absl::Status SendAll(int fd, const void* data, size_t size) {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = send(fd, at, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(absl::StrCat("the peer has gone: ", std::strerror(errno)));
    }
    at += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Reads exactly `size` bytes, waiting in slices when `keep_waiting` is set.
absl::Status RecvAll(int fd, void* data, size_t size, const KeepWaiting& keep_waiting) {
  char* at = static_cast<char*>(data);
  while (size > 0) {
    if (keep_waiting) {
      pollfd p{fd, POLLIN, 0};
      int ready = poll(&p, 1, kPollSliceMs);
      if (ready < 0 && errno != EINTR) {
        return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
      }
      if (ready <= 0) {
        if (absl::Status go_on = keep_waiting(); !go_on.ok()) return go_on;
        continue;
      }
    }
    ssize_t n = recv(fd, at, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return absl::UnavailableError("the peer closed the connection");
    if (n < 0) return absl::UnavailableError(absl::StrCat("recv: ", std::strerror(errno)));
    at += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFrame(int fd, const std::vector<absl::string_view>& parts) {
  std::string header;
  const uint32_t count = static_cast<uint32_t>(parts.size());
  header.append(reinterpret_cast<const char*>(&count), sizeof(count));
  for (absl::string_view part : parts) {
    const uint64_t size = part.size();
    header.append(reinterpret_cast<const char*>(&size), sizeof(size));
  }
  size_t total = header.size();
  for (absl::string_view part : parts) total += part.size();
  if (total <= kCoalesceBytes) {
    // One send: a reader waiting on the socket wakes once, not once per piece (a wake-up is
    // a good part of a small call's round trip).
    for (absl::string_view part : parts) header.append(part.data(), part.size());
    return SendAll(fd, header.data(), header.size());
  }
  if (absl::Status s = SendAll(fd, header.data(), header.size()); !s.ok()) return s;
  for (absl::string_view part : parts) {
    if (absl::Status s = SendAll(fd, part.data(), part.size()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ReadFrame(int fd, int64_t max_bytes,
                                                   const KeepWaiting& keep_waiting) {
  uint32_t count = 0;
  if (absl::Status s = RecvAll(fd, &count, sizeof(count), keep_waiting); !s.ok()) return s;
  if (count > kMaxParts) return absl::InternalError(absl::StrCat("a frame of ", count, " parts"));
  std::vector<uint64_t> sizes(count);
  if (absl::Status s = RecvAll(fd, sizes.data(), count * sizeof(uint64_t), keep_waiting); !s.ok()) {
    return s;
  }
  uint64_t total = 0;
  for (uint64_t size : sizes) {
    if (size > static_cast<uint64_t>(max_bytes) - total) {
      return absl::ResourceExhaustedError(
          absl::StrCat("a frame of more than ", max_bytes, " bytes"));
    }
    total += size;
  }
  std::vector<std::string> parts(count);
  for (uint32_t i = 0; i < count; ++i) {
    parts[i].resize(sizes[i]);
    if (absl::Status s = RecvAll(fd, parts[i].data(), sizes[i], keep_waiting); !s.ok()) return s;
  }
  return parts;
}

bool SpinUntilReadable(int fd, std::chrono::nanoseconds spin) {
  const auto until = std::chrono::steady_clock::now() + spin;
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 0) == 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
  }
  return true;
}

}  // namespace uopd
