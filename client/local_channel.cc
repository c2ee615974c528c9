#include "client/local_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "core/worker/frame_io.h"

namespace uopd {
namespace {

constexpr int64_t kMaxReplyBytes = int64_t{64} << 20;
// How long a call polls for its reply before it sleeps: a small call's reply comes sooner than
// a sleeping thread wakes on a small machine. $UOPD_LOCAL_SPIN_US sets it (0: never).
std::chrono::microseconds ReplySpin() {
  static const std::chrono::microseconds spin = [] {
    const char* value = std::getenv("UOPD_LOCAL_SPIN_US");
    int64_t us = 50;
    if (value != nullptr && !absl::SimpleAtoi(value, &us)) us = 50;
    return std::chrono::microseconds(std::clamp<int64_t>(us, 0, 10'000));
  }();
  return spin;
}
constexpr absl::Duration kHelloTimeout = absl::Seconds(10);  // the daemon's own is 5 s
// Past a call's deadline, how long to wait for the daemon's own DEADLINE_EXCEEDED (which keeps
// the connection) before giving up on the reply (which breaks it: a deadline is the caller's).
constexpr absl::Duration kReplySlack = absl::Milliseconds(250);

}  // namespace

absl::StatusOr<std::unique_ptr<LocalChannel>> LocalChannel::Open(Client& client) {
  UOPD_ASSIGN_OR_RETURN(v1::OpenLocalChannelResponse opened, client.OpenLocalChannel());
  return Connect(opened.path(), opened.ticket());
}

absl::StatusOr<std::unique_ptr<LocalChannel>> LocalChannel::Connect(const std::string& path,
                                                                    const std::string& ticket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("local socket path '", path, "' is too long"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to the local socket ", path, ": ", std::strerror(error)));
  }
  std::unique_ptr<LocalChannel> channel(new LocalChannel(fd));
  v1::LocalHello hello;
  hello.set_ticket(ticket);
  UOPD_RETURN_IF_ERROR(
      channel->Exchange(hello.SerializeAsString(), absl::Now() + kHelloTimeout).status());
  return channel;
}

LocalChannel::~LocalChannel() { close(fd_); }

namespace {

void SetTimeout(absl::Duration timeout, v1::LocalCall* call) {
  if (timeout != absl::InfiniteDuration()) {
    call->set_timeout_us(std::max<int64_t>(1, absl::ToInt64Microseconds(timeout)));
  }
}

}  // namespace

absl::StatusOr<v1::RunPlanResponse> LocalChannel::RunPlan(const v1::RunPlanRequest& request,
                                                          absl::Duration timeout) {
  v1::LocalCall call;
  *call.mutable_run_plan() = request;
  SetTimeout(timeout, &call);
  UOPD_ASSIGN_OR_RETURN(v1::LocalReply reply, Call(call));
  return std::move(*reply.mutable_run_plan());
}

absl::StatusOr<v1::ExecuteResponse> LocalChannel::Execute(const v1::ExecuteRequest& request,
                                                          absl::Duration timeout) {
  v1::LocalCall call;
  *call.mutable_execute() = request;
  SetTimeout(timeout, &call);
  UOPD_ASSIGN_OR_RETURN(v1::LocalReply reply, Call(call));
  return std::move(*reply.mutable_execute());
}

absl::StatusOr<std::string> LocalChannel::CreateBuffer(const std::string& device,
                                                       v1::DType::Scalar dtype, int64_t size,
                                                       const std::string& initial,
                                                       const std::string& session) {
  v1::LocalCall call;
  call.set_session(session);
  v1::CreateBufferRequest* request = call.mutable_create_buffer();
  request->set_device(device);
  request->set_dtype(dtype);
  request->set_size(size);
  request->set_initial(initial);
  UOPD_ASSIGN_OR_RETURN(v1::LocalReply reply, Call(call));
  return reply.create_buffer().handle();
}

absl::Status LocalChannel::FreeBuffer(const std::string& handle) {
  v1::LocalCall call;
  call.mutable_free_buffer()->set_handle(handle);
  return Call(call).status();
}

absl::Status LocalChannel::WriteBufferSmall(const std::string& handle, const std::string& bytes,
                                            int64_t offset) {
  v1::LocalCall call;
  v1::WriteBufferChunk* chunk = call.mutable_write_buffer_small();
  chunk->set_handle(handle);
  chunk->set_offset(offset);
  chunk->set_data(bytes);
  return Call(call).status();
}

absl::StatusOr<std::string> LocalChannel::ReadBufferSmall(const std::string& handle, int64_t offset,
                                                          int64_t length) {
  v1::LocalCall call;
  v1::ReadBufferRequest* request = call.mutable_read_buffer_small();
  request->set_handle(handle);
  request->set_offset(offset);
  request->set_length(length);
  UOPD_ASSIGN_OR_RETURN(v1::LocalReply reply, Call(call));
  return std::move(*reply.mutable_read_buffer_small()->mutable_data());
}

absl::StatusOr<v1::LocalReply> LocalChannel::Call(const v1::LocalCall& call) {
  const absl::Time deadline = call.timeout_us() > 0
                                  ? absl::Now() + absl::Microseconds(call.timeout_us())
                                  : absl::InfiniteFuture();
  return Exchange(call.SerializeAsString(), deadline);
}

bool LocalChannel::broken() const {
  absl::MutexLock lock(&mu_);
  return broken_;
}

absl::StatusOr<v1::LocalReply> LocalChannel::Exchange(const std::string& payload,
                                                      absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    auto free = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !busy_; };
    if (!mu_.AwaitWithDeadline(absl::Condition(&free), deadline)) {
      return absl::DeadlineExceededError(
          "the deadline passed while other calls held the local channel");
    }
    if (broken_) {
      return absl::UnavailableError(
          "the local channel was closed after an earlier call on it failed: open a new one");
    }
    // With no call on the connection, anything to read is the daemon's hang-up (it closes
    // connections idle past --local_socket_idle_timeout): say so before sending, so the caller
    // knows the call never left and may send it on a new channel.
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) {
      broken_ = true;
      return absl::UnavailableError(
          "the daemon closed the local channel (idle, or stopping); the call was not sent: "
          "open a new channel");
    }
    busy_ = true;
  }
  absl::StatusOr<std::vector<std::string>> frame;
  absl::Status written = WriteFrame(fd_, {payload});
  if (written.ok()) {
    if (ReplySpin().count() > 0) SpinUntilReadable(fd_, ReplySpin());
    const absl::Time give_up = deadline + kReplySlack;
    frame = deadline == absl::InfiniteFuture()
                ? ReadFrame(fd_, kMaxReplyBytes)
                : ReadFrame(fd_, kMaxReplyBytes, [give_up]() -> absl::Status {
                    if (absl::Now() < give_up) return absl::OkStatus();
                    return absl::DeadlineExceededError("the local socket sent no reply in time");
                  });
  } else {
    frame = written;
  }
  {
    absl::MutexLock lock(&mu_);
    busy_ = false;
    // Any failure here leaves where the next frame starts unknown.
    if (!frame.ok()) broken_ = true;
  }
  if (!frame.ok()) return frame.status();
  v1::LocalReply reply;
  if (frame->size() != 1 || !reply.ParseFromString((*frame)[0])) {
    return absl::InternalError("the local socket answered with a frame that is not a LocalReply");
  }
  if (reply.code() != 0) {
    const bool known = reply.code() > 0 && reply.code() <= 16;  // gRPC's codes
    return absl::Status(
        known ? static_cast<absl::StatusCode>(reply.code()) : absl::StatusCode::kUnknown,
        reply.message());
  }
  return reply;
}

}  // namespace uopd
