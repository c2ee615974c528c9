#include "bench/attacker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace uopd::bench {
namespace {

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

std::string ReadAll(int fd) {
  std::string text;
  char chunk[4096];
  for (;;) {
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      text.append(chunk, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return text;
    }
  }
}

}  // namespace

absl::StatusOr<AttackerProcess> AttackerProcess::Start(const std::string& program,
                                                       const AttackTargets& targets) {
  std::vector<std::string> args = {program,
                                   kAttackerProcessFlag,
                                   "--address",
                                   targets.address,
                                   "--metrics",
                                   targets.metrics_address,
                                   "--token",
                                   targets.token,
                                   "--idle_connections",
                                   absl::StrCat(targets.idle_connections),
                                   "--nice",
                                   absl::StrCat(targets.nice)};
  if (!targets.only.empty()) {
    args.push_back("--attacks");
    args.push_back(absl::StrJoin(targets.only, ","));
  }
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::InternalError(std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return absl::InternalError(std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return absl::InternalError(absl::StrCat("posix_spawn ", program, ": ", std::strerror(rc)));
  }
  return AttackerProcess(pid, in[1], out[0]);
}

AttackerProcess::AttackerProcess(AttackerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      to_child_(std::exchange(other.to_child_, -1)),
      from_child_(std::exchange(other.from_child_, -1)) {}

AttackerProcess::~AttackerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    (void)waitpid(pid_, nullptr, 0);
  }
  CloseIfOpen(to_child_);
  CloseIfOpen(from_child_);
}

absl::StatusOr<std::map<std::string, int64_t>> AttackerProcess::Stop() {
  if (pid_ <= 0) return absl::FailedPreconditionError("the attacker process was stopped already");
  CloseIfOpen(to_child_);
  const std::string report = ReadAll(from_child_);
  CloseIfOpen(from_child_);
  int wait_status = 0;
  const pid_t pid = std::exchange(pid_, -1);
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return absl::InternalError(absl::StrCat("the attacker process ended with wait status ",
                                            wait_status, "; it wrote: ", report));
  }
  std::map<std::string, int64_t> outcomes;
  for (absl::string_view line : absl::StrSplit(report, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> fields =
        absl::StrSplit(line, absl::MaxSplits('\t', 1));
    int64_t count = 0;
    if (!absl::SimpleAtoi(fields.first, &count)) {
      return absl::InternalError(absl::StrCat("the attacker process wrote '", line, "'"));
    }
    outcomes[std::string(fields.second)] += count;
  }
  return outcomes;
}

int RunAttackerProcess(int argc, char** argv) {
  AttackTargets targets;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--address") {
      targets.address = value;
    } else if (flag == "--metrics") {
      targets.metrics_address = value;
    } else if (flag == "--token") {
      targets.token = value;
    } else if (flag == "--idle_connections") {
      targets.idle_connections = std::atoi(value.c_str());
    } else if (flag == "--nice") {
      targets.nice = std::atoi(value.c_str());
    } else if (flag == "--attacks") {
      targets.only = absl::StrSplit(value, ',');
    } else {
      std::fprintf(stderr, "attacker process: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  // Before any thread exists, gRPC's included, so that every thread of this process inherits it.
  SetCallingThreadPriority(targets.nice);
  std::map<std::string, int64_t> outcomes;
  {
    Attacker attack(targets);
    attack.Start();
    for (char byte;;) {  // the load test writes nothing: this waits for its end of the pipe
      const ssize_t n = read(STDIN_FILENO, &byte, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    attack.Stop();
    outcomes = attack.Outcomes();
  }
  for (const auto& [what, count] : outcomes) {
    std::printf("%lld\t%s\n", static_cast<long long>(count), what.c_str());
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace uopd::bench
