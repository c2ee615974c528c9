// uopd::LocalChannel: the hot calls over the daemon's local socket (server/local_socket.h),
// without gRPC, for clients on the daemon's machine: a small call costs a fraction of its RPC.
// Answers and errors are the RPCs'.
#ifndef UOPD_CLIENT_LOCAL_CHANNEL_H_
#define UOPD_CLIENT_LOCAL_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/uopd_client.h"
#include "uopd/v1/kernel_service.pb.h"

namespace uopd {

// Safe for concurrent use: calls take turns on the one connection, within their deadlines. A
// call that fails mid-way (no reply by its deadline, the daemon gone) leaves the channel broken:
// later calls fail UNAVAILABLE at once, and the caller opens a new one. The daemon closes a
// channel idle past its --local_socket_idle_timeout (10 minutes): the next call finds it so
// before sending and fails UNAVAILABLE, the call not sent.
class LocalChannel {
 public:
  // Asks `client`'s daemon for its local socket and a ticket, connects and presents it: the
  // channel then acts as `client`'s identity. FAILED_PRECONDITION when the daemon has no local
  // socket; UNAVAILABLE when its socket cannot be reached from here.
  static absl::StatusOr<std::unique_ptr<LocalChannel>> Open(Client& client);
  // The same with a path and ticket from OpenLocalChannel.
  static absl::StatusOr<std::unique_ptr<LocalChannel>> Connect(const std::string& path,
                                                               const std::string& ticket);
  ~LocalChannel();
  LocalChannel(const LocalChannel&) = delete;
  LocalChannel& operator=(const LocalChannel&) = delete;

  // Past `timeout` the call stops (its kernels too) with DEADLINE_EXCEEDED.
  absl::StatusOr<v1::RunPlanResponse> RunPlan(const v1::RunPlanRequest& request,
                                              absl::Duration timeout = absl::InfiniteDuration());
  absl::StatusOr<v1::ExecuteResponse> Execute(const v1::ExecuteRequest& request,
                                              absl::Duration timeout = absl::InfiniteDuration());
  // Returns the handle. `session`: a session of this identity's (Client::Session()) that the
  // buffer is freed with; "" for none.
  absl::StatusOr<std::string> CreateBuffer(const std::string& device, v1::DType::Scalar dtype,
                                           int64_t size, const std::string& initial = "",
                                           const std::string& session = "");
  absl::Status FreeBuffer(const std::string& handle);
  absl::Status WriteBufferSmall(const std::string& handle, const std::string& bytes,
                                int64_t offset = 0);
  absl::StatusOr<std::string> ReadBufferSmall(const std::string& handle, int64_t offset = 0,
                                              int64_t length = 0);

  // Any call: its reply, or the status it failed with.
  absl::StatusOr<v1::LocalReply> Call(const v1::LocalCall& call);

  bool broken() const;

 private:
  explicit LocalChannel(int fd) : fd_(fd) {}
  // The reply to `payload`: its turn on the connection waited for until `deadline`, its reply
  // until a moment later (for the daemon's own DEADLINE_EXCEEDED to arrive).
  absl::StatusOr<v1::LocalReply> Exchange(const std::string& payload, absl::Time deadline);

  mutable absl::Mutex mu_;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // a call is on the connection
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  const int fd_;
};

}  // namespace uopd

#endif  // UOPD_CLIENT_LOCAL_CHANNEL_H_
