// AcceptGuard: keeps the daemon's listeners alive when file descriptors run short.
//
// gRPC 1.51's TCP listener gives up for good the first time accept4() fails with EMFILE: a
// client that opens connections past the daemon's descriptor limit, then closes them, leaves a
// daemon that never accepts again. gRPC has no hook for its accept, so this file defines
// accept4() itself (an executable's definition comes before libc's for every library it
// loads) and forwards to libc's. Once armed, a connection that would leave fewer than the
// reserve of descriptors free, or that accept could not take for want of one, is taken off the
// queue and closed at once (the client sees the connection refused and may retry), and the
// listener is told "nothing pending": it stays armed. The reserve keeps descriptors for what
// the daemon itself opens (cache files, compile workers' pipes, Redis).
//
// The guard is process-wide: gRPC's listeners and the local socket's go through it alike.
#ifndef UOPD_SERVER_ACCEPT_GUARD_H_
#define UOPD_SERVER_ACCEPT_GUARD_H_

#include <cstdint>

namespace uopd {

// Arms the guard with the current soft limit on open files (call after raising it): a
// sixteenth of it (32 to 1,024 descriptors) is the reserve. Returns the descriptor number from
// which a connection is refused. May be called again to re-read the limit.
int ArmAcceptGuard();

// Connections closed at once since start because descriptors ran short.
uint64_t ConnectionsRefusedForDescriptors();

}  // namespace uopd

#endif  // UOPD_SERVER_ACCEPT_GUARD_H_
