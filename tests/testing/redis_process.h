// Test helper: a real redis-server (Debian's) in a child process on a free loopback port, with
// no persistence, killed when the helper goes away; and a raw client to look at and damage what
// is stored.
#ifndef UOPD_TESTS_TESTING_REDIS_PROCESS_H_
#define UOPD_TESTS_TESTING_REDIS_PROCESS_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace uopd::testing {

// The path of redis-server, or "" when it is not installed (scripts/install-deps.sh installs it).
inline std::string RedisServerPath() {
  for (const char* path : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

// Skips the test, visibly, where redis-server is missing (CI installs it, so it never skips there).
#define UOPD_REQUIRE_REDIS()                                                                  \
  if (::uopd::testing::RedisServerPath().empty())                                             \
  GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it): the " \
                  "Redis tier is NOT tested"

inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

class RedisProcess {
 public:
  // `extra`: more redis-server arguments ("--maxmemory", "1mb", ...).
  explicit RedisProcess(std::vector<std::string> extra = {}, std::string password = "")
      : extra_(std::move(extra)), password_(std::move(password)) {
    port_ = FreeLoopbackPort();
    Start();
  }
  ~RedisProcess() { Kill(); }

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string url() const {
    return "redis://" + (password_.empty() ? "" : ":" + password_ + "@") +
           "127.0.0.1:" + std::to_string(port_);
  }

  // SIGKILL: what a crashed or evicted Redis looks like to its clients.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Starts it again on the same port (empty: no persistence). False if it did not come up.
  bool Start() {
    if (pid_ > 0) return true;
    std::string server = RedisServerPath();
    if (server.empty()) return false;
    std::vector<std::string> args = {server,       "--port",       std::to_string(port_),
                                     "--bind",     "127.0.0.1",    "--save",
                                     "",           "--appendonly", "no",
                                     "--loglevel", "warning",      "--enable-debug-command",
                                     "local"};
    if (!password_.empty()) {
      args.push_back("--requirepass");
      args.push_back(password_);
    }
    args.insert(args.end(), extra_.begin(), extra_.end());
    pid_ = fork();
    if (pid_ == 0) {
      // Its start-up banner and warnings (overcommit) are not the test's output.
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, STDOUT_FILENO);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      if (Command({"PING"}).has_value()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    Kill();
    return false;
  }

  // Runs a command on a fresh connection: the reply as a string (strings, status and integer
  // replies; "" for nil), nullopt when Redis did not answer or answered an error.
  std::optional<std::string> Command(const std::vector<std::string>& argv) const {
    timeval timeout{5, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeout);
    if (c == nullptr || c->err != 0) {
      if (c != nullptr) redisFree(c);
      return std::nullopt;
    }
    if (!password_.empty()) {
      auto* auth = static_cast<redisReply*>(redisCommand(c, "AUTH %s", password_.c_str()));
      if (auth != nullptr) freeReplyObject(auth);
    }
    std::vector<const char*> args;
    std::vector<size_t> lengths;
    for (const std::string& a : argv) {
      args.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lengths.data()));
    std::optional<std::string> out;
    if (reply != nullptr) {
      if (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) {
        out = std::string(reply->str, reply->len);
      } else if (reply->type == REDIS_REPLY_INTEGER) {
        out = std::to_string(reply->integer);
      } else if (reply->type == REDIS_REPLY_NIL) {
        out = "";
      } else if (reply->type == REDIS_REPLY_ARRAY) {
        std::string joined;
        for (size_t i = 0; i < reply->elements; ++i) {
          if (i > 0) joined += "\n";
          joined.append(reply->element[i]->str, reply->element[i]->len);
        }
        out = joined;
      }
      freeReplyObject(reply);
    }
    redisFree(c);
    return out;
  }

 private:
  std::vector<std::string> extra_;
  std::string password_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_REDIS_PROCESS_H_
