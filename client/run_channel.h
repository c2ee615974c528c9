// uopd::RunChannel: RunPlan over the daemon's run socket (server/run_socket.h), without gRPC,
// for clients on the daemon's machine: a small plan's call costs a fraction of RunPlan's.
#ifndef UOPD_CLIENT_RUN_CHANNEL_H_
#define UOPD_CLIENT_RUN_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/uopd_client.h"
#include "uopd/v1/kernel_service.pb.h"

namespace uopd {

// Safe for concurrent use: calls take turns on the one connection.
class RunChannel {
 public:
  // Asks `client`'s daemon for its run socket and a ticket, connects and presents it: the
  // channel then acts as `client`'s identity. FAILED_PRECONDITION when the daemon has no run
  // socket; UNAVAILABLE when its socket cannot be reached from here.
  static absl::StatusOr<std::unique_ptr<RunChannel>> Open(Client& client);
  // The same with a path and ticket from OpenRunChannel.
  static absl::StatusOr<std::unique_ptr<RunChannel>> Connect(const std::string& path,
                                                             const std::string& ticket);
  ~RunChannel();
  RunChannel(const RunChannel&) = delete;
  RunChannel& operator=(const RunChannel&) = delete;

  // Client::RunPlan's answer and errors; the run stops with DEADLINE_EXCEEDED past `timeout`.
  absl::StatusOr<v1::RunPlanResponse> RunPlan(const v1::RunPlanRequest& request,
                                              absl::Duration timeout = absl::InfiniteDuration());

 private:
  explicit RunChannel(int fd) : fd_(fd) {}
  absl::StatusOr<v1::RunChannelReply> Call(const std::string& payload);

  absl::Mutex mu_;
  const int fd_;
};

}  // namespace uopd

#endif  // UOPD_CLIENT_RUN_CHANNEL_H_
