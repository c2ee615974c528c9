#include "server/local_socket.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/util/log.h"
#include "core/worker/frame_io.h"

namespace uopd {
namespace {

constexpr int64_t kMaxHelloBytes = 4096;

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::FailedPreconditionError(
      absl::StrCat("local socket ", path, ": ", what, ": ", std::strerror(errno)));
}

v1::LocalReply ErrorReply(const absl::Status& status) {
  v1::LocalReply reply;
  reply.set_code(static_cast<int32_t>(status.code()));
  reply.set_message(std::string(status.message()));
  return reply;
}

bool Send(int fd, const v1::LocalReply& reply) {
  const std::string bytes = reply.SerializeAsString();
  return WriteFrame(fd, {bytes}).ok();
}

// Whether the client has hung up: asked by the watchdog while a call runs kernels.
bool HungUp(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalSocket>> LocalSocket::Start(LocalSocketOptions options,
                                                                LocalTickets* tickets,
                                                                LocalSocketHandler handler) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options.path.empty() || options.path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("local socket path '", options.path,
                                                   "' must be 1 to ", sizeof(addr.sun_path) - 1,
                                                   " bytes"));
  }
  std::memcpy(addr.sun_path, options.path.data(), options.path.size());
  struct stat existing {};
  if (lstat(options.path.c_str(), &existing) == 0) {
    // A socket left by an earlier daemon is replaced; anything else is not ours to delete.
    if (!S_ISSOCK(existing.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("local socket ", options.path, ": a file that is not a socket is there"));
    }
    unlink(options.path.c_str());
  }
  std::unique_ptr<LocalSocket> socket(
      new LocalSocket(std::move(options), tickets, std::move(handler)));
  const std::string& path = socket->options_.path;
  socket->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket->listen_fd_ < 0) return Errno("socket", path);
  // Created owner-only, then given the mode asked for: no moment where others could connect.
  const mode_t old_umask = umask(0177);
  const int bound = bind(socket->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old_umask);
  if (bound != 0) return Errno("bind", path);
  if (chmod(path.c_str(), static_cast<mode_t>(socket->options_.mode)) != 0) {
    return Errno("chmod", path);
  }
  if (listen(socket->listen_fd_, 128) != 0) return Errno("listen", path);
  socket->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (socket->wake_fd_ < 0) return Errno("eventfd", path);
  LocalSocket* self = socket.get();
  socket->acceptor_ = std::thread([self] { self->AcceptLoop(); });
  return socket;
}

LocalSocket::~LocalSocket() { Stop(); }

int LocalSocket::connections() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(open_.size());
}

void LocalSocket::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (acceptor_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
    acceptor_.join();
  }
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    // A connection's thread is blocked reading its next frame, or serving a call whose reply
    // will find the connection closed: either way it ends.
    for (int fd : open_) shutdown(fd, SHUT_RDWR);
    for (auto& [id, thread] : threads_) threads.push_back(std::move(thread));
    threads_.clear();
  }
  for (std::thread& thread : threads) thread.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (listen_fd_ >= 0) unlink(options_.path.c_str());
  listen_fd_ = wake_fd_ = -1;
}

void LocalSocket::ReapFinished() {
  std::vector<std::thread> done;
  {
    absl::MutexLock lock(&mu_);
    for (int64_t id : finished_) {
      auto it = threads_.find(id);
      if (it == threads_.end()) continue;
      done.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_.clear();
  }
  for (std::thread& thread : done) thread.join();
}

void LocalSocket::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "local socket: poll failed; no longer accepting",
          {{"error", std::strerror(errno)}});
      return;
    }
    if (fds[1].revents != 0) return;
    ReapFinished();
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: wait a little rather than spin on a listener that stays readable.
      if (errno == EMFILE || errno == ENFILE)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;  // or the client went away before we took it
    }
    const timeval send_timeout = absl::ToTimeval(options_.send_timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
    absl::MutexLock lock(&mu_);
    std::string refusal;
    if (stopping_ || static_cast<int>(open_.size()) >= options_.max_connections) {
      refusal = absl::StrCat("the local socket serves at most ", options_.max_connections,
                             " connections at once: use gRPC, or close one");
    } else if (awaiting_hello_ >= options_.max_awaiting_hello) {
      refusal =
          absl::StrCat(options_.max_awaiting_hello,
                       " connections to the local socket are awaiting their hello: try again");
    }
    if (!refusal.empty()) {
      Send(fd, ErrorReply(absl::ResourceExhaustedError(refusal)));
      close(fd);
      continue;
    }
    const int64_t id = next_thread_id_++;
    std::thread thread;
    try {
      // A process at its pids limit (a container's) cannot start one: std::thread's only
      // report is an exception, and this is where it becomes a refusal instead of a crash.
      thread = std::thread([this, fd, id] {
        Serve(fd);
        absl::MutexLock done(&mu_);
        open_.erase(fd);
        close(fd);
        finished_.push_back(id);
      });
    } catch (const std::system_error& e) {
      Send(fd, ErrorReply(absl::ResourceExhaustedError(
                   absl::StrCat("the daemon cannot start a thread for this connection (", e.what(),
                                "): use gRPC, or try again"))));
      close(fd);
      continue;
    }
    open_.insert(fd);
    ++awaiting_hello_;
    threads_.emplace(id, std::move(thread));
  }
}

void LocalSocket::Serve(int fd) {
  std::optional<Identity> who = Hello(fd);
  if (!who.has_value() || !Admit(fd, *who)) return;
  ServeCalls(fd, *who);
  absl::MutexLock lock(&mu_);
  auto it = per_quota_key_.find(who->quota_key);
  if (--it->second == 0) per_quota_key_.erase(it);
}

std::optional<Identity> LocalSocket::Hello(int fd) {
  const absl::Time hello_deadline = absl::Now() + options_.hello_timeout;
  absl::StatusOr<std::vector<std::string>> hello_frame =
      ReadFrame(fd, kMaxHelloBytes, [&]() -> absl::Status {
        if (absl::Now() > hello_deadline) {
          return absl::DeadlineExceededError(
              absl::StrCat("no hello within ", absl::FormatDuration(options_.hello_timeout)));
        }
        return absl::OkStatus();
      });
  {
    absl::MutexLock lock(&mu_);
    --awaiting_hello_;
  }
  if (!hello_frame.ok()) {
    Send(fd, ErrorReply(hello_frame.status()));
    return std::nullopt;
  }
  v1::LocalHello hello;
  if (hello_frame->size() != 1 || !hello.ParseFromString((*hello_frame)[0])) {
    Send(fd, ErrorReply(absl::InvalidArgumentError(
                 "the first frame must be one LocalHello (a ticket from OpenLocalChannel)")));
    return std::nullopt;
  }
  absl::StatusOr<Identity> who = tickets_->Redeem(hello.ticket());
  if (!who.ok()) {
    Send(fd, ErrorReply(who.status()));
    return std::nullopt;
  }
  return *std::move(who);
}

bool LocalSocket::Admit(int fd, const Identity& who) {
  {
    absl::MutexLock lock(&mu_);
    int& count = per_quota_key_[who.quota_key];
    if (count < options_.max_connections_per_quota_key) {
      ++count;
      return true;
    }
  }
  Send(fd, ErrorReply(absl::ResourceExhaustedError(absl::StrCat(
               "quota '", who.quota_key, "' already has ", options_.max_connections_per_quota_key,
               " connections to the local socket: close one, or share one between threads"))));
  return false;
}

void LocalSocket::SpinForNextCall(int fd) {
  if (spinning_.fetch_add(1, std::memory_order_relaxed) < options_.max_spinning) {
    SpinUntilReadable(fd, absl::ToChronoNanoseconds(options_.spin));
  }
  spinning_.fetch_sub(1, std::memory_order_relaxed);
}

namespace {

// Waits up to `idle` (zero: for ever) for the next call to start; false if none did.
bool NextCallStarts(int fd, absl::Duration idle) {
  const int64_t ms = idle > absl::ZeroDuration()
                         ? std::min<int64_t>(absl::ToInt64Milliseconds(idle), INT32_MAX)
                         : -1;
  pollfd p{fd, POLLIN, 0};
  while (true) {
    const int ready = poll(&p, 1, static_cast<int>(ms));
    if (ready < 0 && errno == EINTR) continue;  // a signal only: the wait starts again
    return ready != 0;  // readable, hung up or an error: ReadFrame says which
  }
}

}  // namespace

void LocalSocket::ServeCalls(int fd, const Identity& who) {
  // Within a frame, the rest must come within the send timeout (a slow sender is a slow
  // reader's twin); between frames, within the idle timeout.
  const timeval frame_timeout = absl::ToTimeval(options_.send_timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &frame_timeout, sizeof(frame_timeout));
  if (!Send(fd, v1::LocalReply())) return;
  const bool may_spin = options_.spin > absl::ZeroDuration() && options_.max_spinning > 0;
  bool back_to_back = false;  // the last call came within options_.spin of the reply before it
  while (true) {
    const auto replied = std::chrono::steady_clock::now();
    if (may_spin && back_to_back) SpinForNextCall(fd);
    if (!NextCallStarts(fd, options_.idle_timeout)) {
      idle_closed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    absl::StatusOr<std::vector<std::string>> frame = ReadFrame(fd, options_.max_frame_bytes);
    back_to_back =
        std::chrono::steady_clock::now() - replied <= absl::ToChronoNanoseconds(options_.spin);
    if (!frame.ok()) {
      // The client hung up (or Stop did): nothing to answer. A frame too large or malformed:
      // say so, then end, as the next frame's start is unknown.
      if (!absl::IsUnavailable(frame.status())) {
        Send(fd, ErrorReply(absl::InvalidArgumentError(absl::StrCat(
                     "unreadable frame (the connection ends): ", frame.status().message()))));
      }
      return;
    }
    v1::LocalReply reply;
    if (frame->size() != 1) {
      reply = ErrorReply(absl::InvalidArgumentError(
          absl::StrCat("a frame of ", frame->size(), " parts; a call is one LocalCall")));
    } else {
      reply = handler_(who, (*frame)[0], [fd] { return HungUp(fd); });
    }
    if (!Send(fd, reply)) return;
  }
}

absl::StatusOr<std::string> PrivateSocketDir() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string dir = runtime != nullptr && runtime[0] == '/'
                              ? std::string(runtime)
                              : absl::StrCat("/tmp/uopd-", getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Errno("mkdir", dir);
  struct stat info {};
  if (lstat(dir.c_str(), &info) != 0) return Errno("lstat", dir);
  if (!S_ISDIR(info.st_mode) || info.st_uid != getuid() || (info.st_mode & 0077) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is not a directory of this user's that only they can enter"));
  }
  return dir;
}

}  // namespace uopd
