// Frames over a stream socket: how the daemon and its compile workers talk.
//
// A frame is a list of byte strings: a u32 count, then for each string a u64 length and the
// bytes (host byte order: both ends are the same binary on the same machine). The reader bounds
// the total size before allocating, so a worker that went wrong cannot make the daemon allocate
// what it claims.
#ifndef UOPD_CORE_WORKER_FRAME_IO_H_
#define UOPD_CORE_WORKER_FRAME_IO_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopd {

// Writes one frame. UNAVAILABLE when the peer has gone (never raises SIGPIPE).
absl::Status WriteFrame(int fd, const std::vector<absl::string_view>& parts);

// Asked while a read waits; returning a non-OK status abandons the read with that status.
using KeepWaiting = std::function<absl::Status()>;

// Reads one frame of at most `max_bytes` in all. UNAVAILABLE when the peer closed the socket
// (before or inside a frame), RESOURCE_EXHAUSTED when the frame is larger than `max_bytes`,
// INTERNAL when it is malformed. With `keep_waiting`, the wait is cut into slices of a few
// milliseconds and `keep_waiting` is asked between them.
absl::StatusOr<std::vector<std::string>> ReadFrame(int fd, int64_t max_bytes,
                                                   const KeepWaiting& keep_waiting = nullptr);

// Polls `fd` without sleeping until it is readable or `spin` has passed; whether it is. For
// replies that come sooner than a sleeping thread would wake (on a small machine, ~30 µs).
bool SpinUntilReadable(int fd, std::chrono::nanoseconds spin);

}  // namespace uopd

#endif  // UOPD_CORE_WORKER_FRAME_IO_H_
