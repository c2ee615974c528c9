// RunSocket: RunPlan without gRPC, for clients on the daemon's machine. A small plan's run costs
// ~15 µs in the daemon; a gRPC round trip over a unix socket costs ~100-200 µs on a loaded
// 2-core machine (HTTP/2 framing, and thread hand-offs on both sides), which is what a tinygrad
// JIT replay through uopd would otherwise pay per call. Here a connection is a plain unix socket
// served by one thread that reads a frame, runs and answers: one wake-up each way.
//
// Who may call: the socket file's mode (like the gRPC unix socket's) says who may connect; a
// connection then acts as the identity whose ticket (RunTickets, from OpenRunChannel over gRPC)
// its first frame presents, so owners, rights and quotas are exactly gRPC's. Only RunPlan runs
// here: everything else (buffers, Prepare, Execute) stays on gRPC.
//
// The frames and messages are in proto/uopd/v1/kernel_service.proto (RunChannelHello, ...).
#ifndef UOPD_SERVER_RUN_SOCKET_H_
#define UOPD_SERVER_RUN_SOCKET_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/session/run_tickets.h"
#include "uopd/v1/kernel_service.pb.h"

namespace uopd {

struct RunSocketOptions {
  std::string path;
  int mode = 0600;  // the socket file's permissions: who on this machine may connect
  int max_connections = 256;
  int64_t max_frame_bytes = 1 << 20;                // a RunChannelCall: a plan id and variables
  absl::Duration hello_timeout = absl::Seconds(5);  // a connection that says nothing is closed
};

// Answers one call of a connection acting as an identity; `gone` says whether the client has
// hung up (for the watchdog).
using RunSocketHandler = std::function<v1::RunChannelReply(
    const Identity& who, const v1::RunChannelCall& call, std::function<bool()> gone)>;

// Safe for concurrent use.
class RunSocket {
 public:
  // Binds and listens (an existing socket file at `path` is replaced only if it is a socket),
  // then accepts on its own thread.
  static absl::StatusOr<std::unique_ptr<RunSocket>> Start(RunSocketOptions options,
                                                          RunTickets* tickets,
                                                          RunSocketHandler handler);
  ~RunSocket();  // Stop()
  RunSocket(const RunSocket&) = delete;
  RunSocket& operator=(const RunSocket&) = delete;

  // Stops accepting, hangs up every connection (a call being served finishes first) and
  // removes the socket file. Idempotent.
  void Stop();

  const std::string& path() const { return options_.path; }
  int connections() const;

 private:
  RunSocket(RunSocketOptions options, RunTickets* tickets, RunSocketHandler handler)
      : options_(std::move(options)), tickets_(tickets), handler_(std::move(handler)) {}
  void AcceptLoop();
  void Serve(int fd);
  void ReapFinished();  // joins the threads of connections that have ended

  const RunSocketOptions options_;
  RunTickets* tickets_;
  RunSocketHandler handler_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd that tells the accept loop to stop
  std::thread acceptor_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<int> open_ ABSL_GUARDED_BY(mu_);  // connections being served
  // One thread per connection; an ending one lists its id in finished_ to be joined.
  absl::flat_hash_map<int64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> finished_ ABSL_GUARDED_BY(mu_);
  int64_t next_thread_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace uopd

#endif  // UOPD_SERVER_RUN_SOCKET_H_
