// Test helper: a real uopd daemon in a child process on free loopback ports, with its own cache
// directory, stopped with SIGTERM when the helper goes away.
#ifndef UOPD_TESTS_TESTING_DAEMON_PROCESS_H_
#define UOPD_TESTS_TESTING_DAEMON_PROCESS_H_

#include <arpa/inet.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace uopd::testing {

class DaemonProcess {
 public:
  // Starts the daemon binary at `daemon` with `extra_flags`; waits until it serves (or 20 s).
  // `open_file_limit` > 0 caps the daemon's descriptors (soft and hard limit, so the daemon
  // cannot raise it), as a small container or a systemd unit would.
  DaemonProcess(std::string daemon, std::string cache_dir,
                std::vector<std::string> extra_flags = {}, int open_file_limit = 0)
      : daemon_(std::move(daemon)),
        cache_dir_(std::move(cache_dir)),
        flags_(std::move(extra_flags)),
        open_file_limit_(open_file_limit) {
    Start();
  }
  ~DaemonProcess() { Stop(); }

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }
  const std::string& metrics_address() const { return metrics_; }

  // SIGTERM without waiting: the daemon starts its drain.
  void Terminate() {
    if (pid_ > 0) kill(pid_, SIGTERM);
  }

  // SIGTERM, then waits; returns the exit status (or -1 if it had to be killed).
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 300; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
  }

  void Restart() {
    Stop();
    Start();
  }

  // A TCP connection to the Prometheus endpoint, -1 on failure; the caller closes it.
  int ConnectMetrics() const { return ConnectTcp(metrics_); }
  // A TCP connection to an "IPV4:PORT" address, -1 on failure; the caller closes it.
  static int ConnectTcp(const std::string& address) {
    std::vector<std::string> parts = absl::StrSplit(address, ':');
    int port = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &port)) return -1;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, parts[0].c_str(), &addr.sin_addr) != 1 ||
        connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // GET /metrics from the Prometheus endpoint ("" on failure).
  std::string ScrapeMetrics() const {
    const int fd = ConnectMetrics();
    if (fd < 0) return "";
    std::string request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
    (void)!write(fd, request.data(), request.size());
    std::string response;
    char buf[65536];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
    close(fd);
    return response;
  }

  // The value of the first sample line starting with `series` in /metrics, or -1.
  double Metric(const std::string& series) const {
    std::string text = ScrapeMetrics();
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (line.substr(0, series.size()) == series && line.size() > series.size() &&
          line[series.size()] == ' ') {
        double value = -1;
        if (absl::SimpleAtod(line.substr(series.size() + 1), &value)) return value;
      }
    }
    return -1;
  }

 private:
  void Start() {
    const std::string port_file = cache_dir_ + ".port";
    unlink(port_file.c_str());
    std::vector<std::string> args = {daemon_,
                                     "--listen=127.0.0.1:0",
                                     "--metrics=127.0.0.1:0",
                                     "--cache_dir=" + cache_dir_,
                                     "--port_file=" + port_file,
                                     "--log_level=warning",
                                     "--check_lock_order"};
    args.insert(args.end(), flags_.begin(), flags_.end());
    pid_ = fork();
    if (pid_ == 0) {
      if (open_file_limit_ > 0) {
        const rlimit limit{static_cast<rlim_t>(open_file_limit_),
                           static_cast<rlim_t>(open_file_limit_)};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 400; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {  // it refused to start
        pid_ = -1;
        return;
      }
      std::ifstream in(port_file);
      if (in && std::getline(in, address_) && std::getline(in, metrics_)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Stop();
  }

  std::string daemon_;
  std::string cache_dir_;
  std::vector<std::string> flags_;
  int open_file_limit_ = 0;
  pid_t pid_ = -1;
  std::string address_, metrics_;
};

// A fresh directory under the test's temporary folder.
inline std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/uopd-test-" + name + "-" +
                    std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) return "/tmp";
  return dir;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_DAEMON_PROCESS_H_
