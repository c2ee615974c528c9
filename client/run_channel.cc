#include "client/run_channel.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "core/worker/frame_io.h"

namespace uopd {
namespace {

constexpr int64_t kMaxReplyBytes = int64_t{64} << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<RunChannel>> RunChannel::Open(Client& client) {
  UOPD_ASSIGN_OR_RETURN(v1::OpenRunChannelResponse opened, client.OpenRunChannel());
  return Connect(opened.path(), opened.ticket());
}

absl::StatusOr<std::unique_ptr<RunChannel>> RunChannel::Connect(const std::string& path,
                                                                const std::string& ticket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("run socket path '", path, "' is too long"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to the run socket ", path, ": ", std::strerror(error)));
  }
  std::unique_ptr<RunChannel> channel(new RunChannel(fd));
  v1::RunChannelHello hello;
  hello.set_ticket(ticket);
  UOPD_RETURN_IF_ERROR(channel->Call(hello.SerializeAsString()).status());
  return channel;
}

RunChannel::~RunChannel() { close(fd_); }

absl::StatusOr<v1::RunPlanResponse> RunChannel::RunPlan(const v1::RunPlanRequest& request,
                                                        absl::Duration timeout) {
  v1::RunChannelCall call;
  *call.mutable_run() = request;
  if (timeout != absl::InfiniteDuration()) {
    call.set_timeout_us(std::max<int64_t>(1, absl::ToInt64Microseconds(timeout)));
  }
  UOPD_ASSIGN_OR_RETURN(v1::RunChannelReply reply, Call(call.SerializeAsString()));
  return std::move(*reply.mutable_response());
}

absl::StatusOr<v1::RunChannelReply> RunChannel::Call(const std::string& payload) {
  absl::StatusOr<std::vector<std::string>> frame;
  {
    absl::MutexLock lock(&mu_);
    UOPD_RETURN_IF_ERROR(WriteFrame(fd_, {payload}));
    frame = ReadFrame(fd_, kMaxReplyBytes);
  }
  if (!frame.ok()) return frame.status();
  v1::RunChannelReply reply;
  if (frame->size() != 1 || !reply.ParseFromString((*frame)[0])) {
    return absl::InternalError("the run socket answered with a frame that is not a reply");
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
