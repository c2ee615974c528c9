// LocalSocket: the hot calls without gRPC, for clients on the daemon's machine. A small kernel's
// run or a buffer call costs ~5-50 µs in the daemon; a gRPC round trip over a unix socket costs
// ~200 µs on a loaded 2-core machine (HTTP/2 framing, and thread hand-offs on both sides), which
// a tinygrad program through uopd would otherwise pay per kernel. Here a connection is a plain
// unix socket served by one thread that reads a frame, serves it and answers: one wake-up each
// way.
//
// Who may call: the socket file's mode (like the gRPC unix socket's) says who may connect; a
// connection then acts as the identity whose ticket (LocalTickets, from OpenLocalChannel over
// gRPC) its first frame presents, so owners, rights and quotas are exactly gRPC's. What it
// serves: RunPlan, Execute, CreateBuffer, FreeBuffer, WriteBufferSmall and ReadBufferSmall, the
// calls a program makes per kernel; the rest (Compile, Prepare, streams, the cache) is gRPC's.
//
// The frames and messages are in proto/uopd/v1/kernel_service.proto (LocalHello, ...).
#ifndef UOPD_SERVER_LOCAL_SOCKET_H_
#define UOPD_SERVER_LOCAL_SOCKET_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/session/local_tickets.h"
#include "uopd/v1/kernel_service.pb.h"

namespace uopd {

struct LocalSocketOptions {
  std::string path;
  int mode = 0600;  // the socket file's permissions: who on this machine may connect
  // Connections are bounded three ways, so that no caller can take the socket from the others:
  // in all, per quota key (an identity, or the anonymous callers of one host, as quotas are),
  // and awaiting their hello (which must come within `hello_timeout`).
  int max_connections = 512;
  int max_connections_per_quota_key = 32;
  int max_awaiting_hello = 64;
  int64_t max_frame_bytes = 4 << 20;                // gRPC's message limit
  absl::Duration hello_timeout = absl::Seconds(5);  // a connection that says nothing is closed
  // A client that stops reading its replies is hung up on once a reply has waited this long to
  // be taken, rather than holding a thread; one that stops in the middle of a frame, once the
  // frame's rest has not come for this long.
  absl::Duration send_timeout = absl::Seconds(30);
  // A connection with no call for this long is closed (its thread and slot go back): without
  // it, connections that said hello and nothing since hold their slots for good. Clients
  // notice at their next call and open a new connection before sending it. Zero: never.
  absl::Duration idle_timeout = absl::Minutes(10);
  // After answering a client that calls back to back (its last call came within this long of
  // the reply before), the connection's thread polls for the next call this long before it
  // sleeps: on a small machine a sleeping thread's wake-up costs more than a tiny call. At most
  // `max_spinning` threads poll at once, so polling never takes every core. Zero: never.
  absl::Duration spin = absl::Microseconds(200);
  int max_spinning = 1;
};

// Answers one call of a connection acting as an identity: `frame` is the call's bytes, a
// serialized LocalCall the handler parses (so it can refuse a large one before parsing it);
// `gone` says whether the client has hung up (for the watchdog).
using LocalSocketHandler = std::function<v1::LocalReply(
    const Identity& who, const std::string& frame, std::function<bool()> gone)>;

// Safe for concurrent use.
class LocalSocket {
 public:
  // Binds and listens (an existing socket file at `path` is replaced only if it is a socket),
  // then accepts on its own thread.
  static absl::StatusOr<std::unique_ptr<LocalSocket>> Start(LocalSocketOptions options,
                                                            LocalTickets* tickets,
                                                            LocalSocketHandler handler);
  ~LocalSocket();  // Stop()
  LocalSocket(const LocalSocket&) = delete;
  LocalSocket& operator=(const LocalSocket&) = delete;

  // Stops accepting, hangs up every connection (a call being served finishes first) and
  // removes the socket file. Idempotent.
  void Stop();

  const std::string& path() const { return options_.path; }
  int connections() const;
  // Connections closed because they had no call for the idle timeout, since start.
  int64_t idle_closed() const { return idle_closed_.load(std::memory_order_relaxed); }

 private:
  LocalSocket(LocalSocketOptions options, LocalTickets* tickets, LocalSocketHandler handler)
      : options_(std::move(options)), tickets_(tickets), handler_(std::move(handler)) {}
  void AcceptLoop();
  void Serve(int fd);
  // The identity the connection's hello names, or nullopt once the connection has been told why
  // it ends. Either way it no longer counts as awaiting its hello.
  std::optional<Identity> Hello(int fd);
  // Counts the connection against its quota key's bound, or tells it it is over and is false.
  bool Admit(int fd, const Identity& who);
  void ServeCalls(int fd, const Identity& who);
  // Polls `fd` for up to options_.spin, unless options_.max_spinning threads already are.
  void SpinForNextCall(int fd);
  void ReapFinished();  // joins the threads of connections that have ended

  const LocalSocketOptions options_;
  LocalTickets* tickets_;
  LocalSocketHandler handler_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd that tells the accept loop to stop
  std::thread acceptor_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<int> open_ ABSL_GUARDED_BY(mu_);  // connections being served
  int awaiting_hello_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int> spinning_{0};
  std::atomic<int64_t> idle_closed_{0};
  absl::flat_hash_map<std::string, int> per_quota_key_ ABSL_GUARDED_BY(mu_);  // admitted ones
  // One thread per connection; an ending one lists its id in finished_ to be joined.
  absl::flat_hash_map<int64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> finished_ ABSL_GUARDED_BY(mu_);
  int64_t next_thread_id_ ABSL_GUARDED_BY(mu_) = 0;
};

// A directory only this user can enter, for the local socket of a daemon that listens on
// loopback TCP: $XDG_RUNTIME_DIR when set, else /tmp/uopd-<uid>, made mode 0700 and refused
// (FAILED_PRECONDITION) when it is not a directory of this user's that only they can enter, as
// another user could otherwise put their own socket or a link there first.
absl::StatusOr<std::string> PrivateSocketDir();

}  // namespace uopd

#endif  // UOPD_SERVER_LOCAL_SOCKET_H_
