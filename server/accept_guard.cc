#include "server/accept_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace uopd {
namespace {

using Accept4Fn = int (*)(int, sockaddr*, socklen_t*, int);

// 0: not armed (accept4 only forwards). Else the first descriptor number that is refused.
std::atomic<int> refuse_from{0};
std::atomic<uint64_t> refused{0};
// A descriptor held open so that, at EMFILE, one can be freed to take the pending connection
// off the queue (and close it): the queue does not otherwise shrink, and the listener would
// be woken for it again and again.
std::mutex spare_mu;
int spare = -1;

Accept4Fn LibcAccept4() {
  static const Accept4Fn real = reinterpret_cast<Accept4Fn>(dlsym(RTLD_NEXT, "accept4"));
  return real;
}

// Takes one pending connection off `listener` at EMFILE by freeing the spare descriptor for
// it. False: none was pending, or there was no spare (another thread took its number while it
// was free: it is opened again on a later call, once a descriptor is free).
bool DropOnePendingConnection(Accept4Fn accept, int listener) {
  std::lock_guard<std::mutex> lock(spare_mu);
  if (spare < 0) spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (spare < 0) return false;
  close(spare);
  const int taken = accept(listener, nullptr, nullptr, SOCK_CLOEXEC);
  const int saved = errno;
  if (taken >= 0) close(taken);
  spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  errno = saved;
  return taken >= 0;
}

}  // namespace

int ArmAcceptGuard() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  const int soft = static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 30));
  const int from = soft - std::clamp(soft / 16, 32, 1024);
  {
    std::lock_guard<std::mutex> lock(spare_mu);
    if (spare < 0) spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  refuse_from.store(std::max(from, 1), std::memory_order_relaxed);
  return refuse_from.load(std::memory_order_relaxed);
}

uint64_t ConnectionsRefusedForDescriptors() { return refused.load(std::memory_order_relaxed); }

}  // namespace uopd

// Every listener's accept4 comes here. Callers (gRPC's listener, the local socket) read
// EAGAIN as "the queue is empty" and wait for the next connection's wake-up, so a refusal goes
// on until the queue is empty: connections queued behind it would otherwise wait for a new
// arrival. At EMFILE the answer is EAGAIN whatever happens, never the error gRPC dies of.
extern "C" int accept4(int listener, sockaddr* address, socklen_t* length, int flags) {
  const uopd::Accept4Fn accept = uopd::LibcAccept4();
  if (accept == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const int from = uopd::refuse_from.load(std::memory_order_relaxed);
  if (from == 0) return accept(listener, address, length, flags);
  while (true) {
    const int fd = accept(listener, address, length, flags);
    if (fd >= 0 && fd < from) return fd;
    if (fd >= 0) {
      close(fd);  // it would eat into the reserve
    } else if (errno == EMFILE || errno == ENFILE) {
      if (!uopd::DropOnePendingConnection(accept, listener)) {
        errno = EAGAIN;
        return -1;
      }
    } else if (errno == EINTR) {
      continue;
    } else {
      return -1;  // EAGAIN (the queue is empty), or as libc said
    }
    uopd::refused.fetch_add(1, std::memory_order_relaxed);
  }
}
