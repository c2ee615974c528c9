#include "core/worker/compile_worker_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/worker/compile_protocol.h"
#include "core/worker/frame_io.h"

extern char** environ;

namespace uopd {
namespace {

constexpr int kWorkerFd = 3;
constexpr absl::Duration kReadyTimeout = absl::Seconds(30);
// A worker gets this much CPU time beyond the wall-clock limit before it kills itself.
constexpr int64_t kCpuMarginSeconds = 5;

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    return absl::StrCat("signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  return "an unknown status";
}

// Kills `pid` and waits for it; how it ended, or "" if it was alive until killed here.
std::string KillAndReap(pid_t pid) {
  int status = 0;
  bool already_dead = waitpid(pid, &status, WNOHANG) == pid;
  if (!already_dead) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // Killed here, unless it died between the two waits of something else.
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return "";
  }
  return DescribeExit(status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompileWorkerPool>> CompileWorkerPool::Start(
    CompileWorkerPoolOptions options) {
  if (options.executable.empty() || options.argv.empty()) {
    return absl::InvalidArgumentError("no worker command");
  }
  if (options.workers < 1) options.workers = 1;
  std::unique_ptr<CompileWorkerPool> pool(new CompileWorkerPool(std::move(options)));
  pool->keeper_ = std::thread([p = pool.get()] { p->KeeperLoop(); });
  std::string error;
  {
    absl::MutexLock lock(&pool->mu_);
    auto started = [p = pool.get()]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
      return p->stats_.started > 0 || !p->spawn_error_.empty();
    };
    pool->mu_.Await(absl::Condition(&started));
    if (pool->stats_.started == 0) error = pool->spawn_error_;
  }
  if (!error.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot start a compile worker: ", error));
  }
  return pool;
}

CompileWorkerPool::~CompileWorkerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  keeper_.join();
  absl::MutexLock lock(&mu_);
  for (Worker& worker : idle_) {
    close(worker.fd);
    KillAndReap(worker.pid);
  }
  // Workers busy with a job are discarded by their callers, which the daemon has stopped.
}

absl::StatusOr<std::string> CompileWorkerPool::SpawnWorker(Worker* worker) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  // dup2 onto the same number would leave close-on-exec set: keep the child's end off fd 3.
  if (fds[1] == kWorkerFd) {
    int moved = fcntl(fds[1], F_DUPFD_CLOEXEC, kWorkerFd + 1);
    close(fds[1]);
    fds[1] = moved;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], kWorkerFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);  // the daemon's threads block SIGTERM; workers not
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);  // a terminal's Ctrl-C goes to the daemon, not to them
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> argv;
  for (const std::string& arg : options_.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, options_.executable.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return absl::InternalError(
        absl::StrCat("posix_spawn ", options_.executable, ": ", std::strerror(rc)));
  }
  // Best effort: a worker at the daemon's own priority still works.
  if (std::optional<int> nice = NiceAboveThisProcess(options_.priority.nice)) {
    (void)setpriority(PRIO_PROCESS, pid, *nice);
  }
  const absl::Time deadline = absl::Now() + kReadyTimeout;
  auto frame = ReadFrame(fds[0], 1 << 16, [&]() -> absl::Status {
    if (absl::Now() > deadline) return absl::DeadlineExceededError("no ready message in 30 s");
    return absl::OkStatus();
  });
  if (!frame.ok() || frame->size() != 2 || (*frame)[0] != kReadyTag) {
    std::string how = KillAndReap(pid);
    close(fds[0]);
    std::string why = !frame.ok()          ? std::string(frame.status().message())
                      : frame->size() == 2 ? (*frame)[1]
                                           : "an unexpected first message";
    return absl::InternalError(
        absl::StrCat(why, how.empty() ? "" : absl::StrCat(" (the worker ended with ", how, ")")));
  }
  worker->pid = pid;
  worker->fd = fds[0];
  return (*frame)[1];
}

void CompileWorkerPool::KeeperLoop() {
  absl::Duration backoff = absl::Milliseconds(100);
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto needed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        // A worker per turn, and one for each demoted compile that handed its turn back.
        return stopping_ || alive_ < options_.workers + off_turn_;
      };
      mu_.Await(absl::Condition(&needed));
      if (stopping_) return;
      ++alive_;  // counted while starting, so Discard racing with this does not double-start
    }
    Worker worker;
    absl::StatusOr<std::string> sandbox = SpawnWorker(&worker);
    absl::MutexLock lock(&mu_);
    if (!sandbox.ok()) {
      --alive_;
      if (spawn_error_.empty()) {
        Log(LogLevel::kError, "cannot start a compile worker",
            {{"error", std::string(sandbox.status().message())}});
      }
      spawn_error_ = std::string(sandbox.status().message());
      // Back off (up to 5 s) so a worker that cannot start does not spin.
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), backoff);
      backoff = std::min(backoff * 2, absl::Seconds(5));
      continue;
    }
    if (sandbox_.empty()) sandbox_ = *sandbox;
    spawn_error_.clear();
    backoff = absl::Milliseconds(100);
    ++stats_.started;
    idle_.push_back(worker);
  }
}

absl::StatusOr<CompileWorkerPool::Worker> CompileWorkerPool::Acquire(const std::string& share,
                                                                     const StopFlag* stop) {
  auto stopped = [stop] { return stop != nullptr && stop->stopped(); };
  // A call that is over starts no compile, even with a worker free.
  if (!turns_.Acquire(share, stopped)) {
    return absl::CancelledError("the call ended while waiting for a compile worker");
  }
  // One turn per worker, so a worker is idle now or soon (one that died is being replaced).
  absl::MutexLock lock(&mu_);
  while (idle_.empty()) {
    const bool hopeless = alive_ == 0 && !spawn_error_.empty();
    if (stopped() || hopeless) {
      turns_.Release(share);
      if (!hopeless)
        return absl::CancelledError("the call ended while waiting for a compile worker");
      return absl::UnavailableError(
          absl::StrCat("no compile worker can be started: ", spawn_error_));
    }
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](std::deque<Worker>* idle) { return !idle->empty(); }, &idle_),
                         absl::Milliseconds(5));
  }
  Worker worker = idle_.front();
  idle_.pop_front();
  return worker;
}

void CompileWorkerPool::Release(Worker worker, const std::string& share) {
  if (worker.demoted) {
    Discard(worker, share);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    idle_.push_back(worker);
  }
  turns_.Release(share);
}

std::string CompileWorkerPool::Discard(Worker worker, const std::string& share) {
  close(worker.fd);
  std::string how = KillAndReap(worker.pid);
  {
    absl::MutexLock lock(&mu_);
    --alive_;  // the keeper starts a replacement
    if (worker.off_turn) {
      --off_turn_;
      return how;
    }
  }
  turns_.Release(share);
  return how;
}

void CompileWorkerPool::Demote(Worker* worker, const std::string& share) {
  worker->demoted = true;
  if (std::optional<int> nice =
          NiceAboveThisProcess(options_.priority.nice + options_.priority.demoted_nice)) {
    (void)setpriority(PRIO_PROCESS, worker->pid, *nice);
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.demoted;
    if (off_turn_ >= options_.workers) return;  // keeps its turn, at the lower priority
    ++off_turn_;                                // the keeper starts a worker for the turn
    worker->off_turn = true;
  }
  turns_.Release(share);
}

absl::StatusOr<CompiledKernel> CompileWorkerPool::Compile(const std::string& base_device,
                                                          const std::string& target,
                                                          const ProgramSpec& spec,
                                                          const StopFlag* stop) {
  CompileJob job;
  job.base_device = base_device;
  job.target = target;
  job.entry = spec.name;
  job.source = spec.src;
  job.cpu_seconds = absl::ToInt64Seconds(options_.compile_timeout) + kCpuMarginSeconds;
  const std::string share = stop != nullptr ? stop->share() : std::string();
  // A worker that died while idle fails the send; try another (a few times at most).
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<Worker> worker = Acquire(share, stop);
    if (!worker.ok()) return worker.status();
    if (absl::Status sent = SendJob(worker->fd, job); !sent.ok()) {
      Discard(*worker, share);
      if (attempt < 3) continue;
      return absl::UnavailableError("compile workers keep dying before they get a job");
    }
    const absl::Time started = absl::Now();
    const absl::Time deadline = started + options_.compile_timeout;
    auto frame = ReadFrame(worker->fd, options_.max_reply_bytes, [&]() -> absl::Status {
      const absl::Duration demote_after = options_.priority.demote_after;
      if (!worker->demoted && demote_after > absl::ZeroDuration() &&
          absl::Now() - started > demote_after) {
        Demote(&*worker, share);
      }
      if (stop != nullptr && stop->stopped()) {
        return absl::CancelledError(
            absl::StrCat("the call ended while kernel ", spec.name, " was compiling"));
      }
      if (absl::Now() > deadline) {
        return absl::ResourceExhaustedError(
            absl::StrCat("compiling kernel ", spec.name, " took longer than the limit of ",
                         absl::FormatDuration(options_.compile_timeout)));
      }
      return absl::OkStatus();
    });
    if (!frame.ok()) {
      std::string how = Discard(*worker, share);
      absl::MutexLock lock(&mu_);
      switch (frame.status().code()) {
        case absl::StatusCode::kCancelled:
          ++stats_.cancelled;
          return frame.status();
        case absl::StatusCode::kResourceExhausted:
          ++stats_.timeouts;
          return frame.status();
        default:
          ++stats_.crashes;
          return absl::InternalError(
              absl::StrCat("the compiler crashed on kernel ", spec.name, " (the worker ended with ",
                           how.empty() ? std::string(frame.status().message()) : how, ")"));
      }
    }
    absl::StatusOr<CompileReply> reply = ParseReply(*frame);
    if (!reply.ok() || reply->exiting) {
      Discard(*worker, share);
    } else {
      Release(*worker, share);
    }
    absl::MutexLock lock(&mu_);
    ++stats_.compiles;
    if (!reply.ok()) return reply.status();
    if (reply->exiting) ++stats_.crashes;
    return std::move(reply->result);
  }
}

CompileWorkerStats CompileWorkerPool::stats() const {
  absl::MutexLock lock(&mu_);
  CompileWorkerStats stats = stats_;
  stats.idle = static_cast<int64_t>(idle_.size());
  return stats;
}

}  // namespace uopd
