// The compile workers' sandbox, probed from inside: a child process enters it and tries what a
// compromised compiler would.
#include "core/worker/sandbox.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uopd {
namespace {

// What the sandboxed child could still do; one byte per probe, '1' = it worked.
struct Probes {
  bool read_host_file, read_allowed_dir, write_file, create_socket, fork_process, run_program,
      signal_parent, huge_allocation, use_open_fd;
};

// Runs the probes in a child inside a sandbox that lets it read `allowed_dir` only.
Probes ProbeInSandbox(const std::string& allowed_dir, int64_t memory_bytes) {
  int pipe_fds[2];
  EXPECT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  if (child == 0) {
    close(pipe_fds[0]);
    SandboxPolicy policy;
    policy.memory_bytes = memory_bytes;
    policy.read_only_dirs = {allowed_dir};
    if (!EnterSandbox(policy).ok()) _exit(3);
    std::string result;
    auto record = [&](bool worked) { result.push_back(worked ? '1' : '0'); };
    record(open("/etc/passwd", O_RDONLY) >= 0);
    record(open((allowed_dir + "/allowed.txt").c_str(), O_RDONLY) >= 0);
    record(open((allowed_dir + "/written.txt").c_str(), O_WRONLY | O_CREAT, 0600) >= 0);
    record(socket(AF_INET, SOCK_STREAM, 0) >= 0);
    pid_t grandchild = fork();
    if (grandchild == 0) _exit(0);
    record(grandchild > 0);
    pid_t spawned = vfork();
    if (spawned == 0) {
      execl("/bin/true", "true", nullptr);
      _exit(127);
    }
    int status = 0;
    if (spawned > 0) waitpid(spawned, &status, 0);
    record(spawned > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    record(kill(getppid(), 0) == 0);
    void* big = malloc(size_t{8} << 30);
    record(big != nullptr);
    // What it was given stays usable: the pipe it reports on.
    record(true);
    if (write(pipe_fds[1], result.data(), result.size()) != static_cast<ssize_t>(result.size())) {
      _exit(4);
    }
    _exit(0);
  }
  close(pipe_fds[1]);
  char bytes[16] = {};
  ssize_t n = read(pipe_fds[0], bytes, sizeof(bytes));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(n, 9);
  auto at = [&](int i) { return n > i && bytes[i] == '1'; };
  return Probes{at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8)};
}

TEST(Sandbox, ACompromisedCompilerCanReadOnlyWhatItIsGivenAndNothingElse) {
  char dir_template[] = "/tmp/uopd-sandbox-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  FILE* f = fopen((dir + "/allowed.txt").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("headers", f);
  fclose(f);

  Probes probes = ProbeInSandbox(dir, int64_t{2} << 30);
  EXPECT_FALSE(probes.read_host_file) << "/etc/passwd was readable";
  if (LandlockAbi() > 0) {
    EXPECT_TRUE(probes.read_allowed_dir) << "the directory it may read was not readable";
  } else {
    std::printf("[  NOTE    ] no Landlock in this kernel: every file open is denied by seccomp\n");
    EXPECT_FALSE(probes.read_allowed_dir);
  }
  EXPECT_FALSE(probes.write_file);
  EXPECT_FALSE(probes.create_socket);
  EXPECT_FALSE(probes.fork_process);
  EXPECT_FALSE(probes.run_program);
  EXPECT_FALSE(probes.signal_parent);
  EXPECT_FALSE(probes.huge_allocation) << "8 GiB allocated under a 2 GiB limit";
  EXPECT_TRUE(probes.use_open_fd);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace uopd
