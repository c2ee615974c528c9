// The local socket's bounds, on the class itself with a trivial handler: no caller can take
// every connection (per quota key, awaiting a hello) or hold a thread by not reading replies.
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/worker/frame_io.h"
#include "gtest/gtest.h"
#include "server/local_socket.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/local_socket_client.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

Identity Named(const std::string& name) {
  return Identity{name, name, kRightRun, /*anonymous=*/false};
}

// A connection that has said hello with a ticket of `who`; its hello's reply in `*reply`.
int Hello(const std::string& path, LocalTickets& tickets, const Identity& who,
          v1::LocalReply* reply) {
  auto ticket = tickets.Issue(who);
  EXPECT_TRUE(ticket.ok()) << ticket.status();
  v1::LocalHello hello;
  hello.set_ticket(ticket.ok() ? *ticket : "");
  const int fd = testing::ConnectUnix(path);
  EXPECT_TRUE(WriteFrame(fd, {hello.SerializeAsString()}).ok());
  *reply = testing::ReadLocalReply(fd);
  return fd;
}

// Waits (up to 10 s) for the socket's open connections to become `n`: a connection's thread
// ends a moment after the client hangs up.
bool ConnectionsBecome(const LocalSocket& socket, int n) {
  for (int i = 0; i < 1000 && socket.connections() != n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return socket.connections() == n;
}

struct Fixture {
  explicit Fixture(const std::string& name, LocalSocketOptions options,
                   LocalSocketHandler handler = nullptr) {
    options.path = testing::TempDir(name) + "/local";
    if (handler == nullptr) {
      handler = [](const Identity&, const std::string&, std::function<bool()>) {
        return v1::LocalReply();
      };
    }
    auto started = LocalSocket::Start(options, &tickets, std::move(handler));
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) socket = std::move(*started);
  }
  LocalTickets tickets;
  std::unique_ptr<LocalSocket> socket;
};

TEST(LocalSocketLimits, OneQuotaKeyCannotTakeEveryConnection) {
  Fixture f("local-limits-quota", LocalSocketOptions{.max_connections_per_quota_key = 2});
  ASSERT_NE(f.socket, nullptr);
  const std::string& path = f.socket->path();
  v1::LocalReply reply;
  const int first = Hello(path, f.tickets, Named("alice"), &reply);
  EXPECT_EQ(reply.code(), 0) << reply.message();
  const int second = Hello(path, f.tickets, Named("alice"), &reply);
  EXPECT_EQ(reply.code(), 0) << reply.message();
  const int third = Hello(path, f.tickets, Named("alice"), &reply);
  EXPECT_EQ(reply.code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_NE(reply.message().find("quota 'alice' already has 2 connections"), std::string::npos)
      << reply.message();
  close(third);
  const int bobs = Hello(path, f.tickets, Named("bob"), &reply);
  EXPECT_EQ(reply.code(), 0) << reply.message();

  // A connection closed is a slot back.
  close(first);
  ASSERT_TRUE(ConnectionsBecome(*f.socket, 2));
  const int again = Hello(path, f.tickets, Named("alice"), &reply);
  EXPECT_EQ(reply.code(), 0) << reply.message();
  for (int fd : {second, bobs, again}) close(fd);
}

TEST(LocalSocketLimits, SilentConnectionsCannotTakeEverySlot) {
  Fixture f("local-limits-hello",
            LocalSocketOptions{.max_awaiting_hello = 2, .hello_timeout = absl::Seconds(30)});
  ASSERT_NE(f.socket, nullptr);
  const std::string& path = f.socket->path();
  const int silent1 = testing::ConnectUnix(path);
  const int silent2 = testing::ConnectUnix(path);
  ASSERT_TRUE(ConnectionsBecome(*f.socket, 2));
  const int refused = testing::ConnectUnix(path);
  v1::LocalReply reply = testing::ReadLocalReply(refused);
  EXPECT_EQ(reply.code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_NE(reply.message().find("awaiting their hello"), std::string::npos) << reply.message();
  close(refused);

  close(silent1);
  ASSERT_TRUE(ConnectionsBecome(*f.socket, 1));
  const int speaks = Hello(path, f.tickets, Named("alice"), &reply);
  EXPECT_EQ(reply.code(), 0) << reply.message();
  for (int fd : {silent2, speaks}) close(fd);
}

TEST(LocalSocketLimits, AClientThatReadsNoRepliesIsHungUpOn) {
  // A reply larger than a unix socket's buffers: it cannot all be sent until the client reads.
  Fixture f("local-limits-send", LocalSocketOptions{.send_timeout = absl::Milliseconds(200)},
            [](const Identity&, const std::string&, std::function<bool()>) {
              v1::LocalReply reply;
              reply.set_message(std::string(4 << 20, 'x'));
              return reply;
            });
  ASSERT_NE(f.socket, nullptr);
  v1::LocalReply reply;
  const int fd = Hello(f.socket->path(), f.tickets, Named("alice"), &reply);
  ASSERT_EQ(reply.code(), 0) << reply.message();
  ASSERT_TRUE(WriteFrame(fd, {v1::LocalCall().SerializeAsString()}).ok());
  EXPECT_TRUE(ConnectionsBecome(*f.socket, 0)) << f.socket->connections();
  close(fd);
}

// This process in a pids cgroup (v1 or v2) allowing `extra` more tasks than it has, until the
// object goes (the process moves back). Empty where no such cgroup can be made (not root, no
// pids controller): the caller skips, saying so.
class PidsLimit {
 public:
  static std::unique_ptr<PidsLimit> Allowing(int extra) {
    for (const std::string root : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
      std::ifstream controllers(root + "/cgroup.controllers");
      const bool v2 = controllers.good();
      std::string line;
      if (v2 && (!std::getline(controllers, line) || line.find("pids") == std::string::npos)) {
        continue;
      }
      const std::string dir = absl::StrCat(root, "/uopd-test-", getpid());
      if (mkdir(dir.c_str(), 0755) != 0) continue;
      auto limit = std::unique_ptr<PidsLimit>(new PidsLimit(root, dir));
      const int tasks = Tasks();
      if (!limit->Write("pids.max", absl::StrCat(tasks + extra)) ||
          !limit->Write("cgroup.procs", absl::StrCat(getpid()))) {
        return nullptr;  // the destructor moves back and removes the folder
      }
      return limit;
    }
    return nullptr;
  }
  ~PidsLimit() {
    std::ofstream(root_ + "/cgroup.procs") << getpid() << std::endl;
    rmdir(dir_.c_str());
  }

 private:
  PidsLimit(std::string root, std::string dir) : root_(std::move(root)), dir_(std::move(dir)) {}
  static int Tasks() {
    int n = 0;
    if (DIR* d = opendir("/proc/self/task")) {
      while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
      closedir(d);
    }
    return n;
  }
  bool Write(const std::string& file, const std::string& value) {
    std::ofstream out(dir_ + "/" + file);
    out << value << std::endl;
    return out.good();
  }
  std::string root_, dir_;
};

// At the process's pids limit (a container's), a connection that cannot get a thread is refused
// with RESOURCE_EXHAUSTED and the socket serves on: std::thread's exception once ended the
// daemon.
TEST(LocalSocketLimits, AConnectionWithoutAThreadIsRefusedNotACrash) {
  Fixture f("local-limits-pids", LocalSocketOptions{.hello_timeout = absl::Seconds(30)});
  ASSERT_NE(f.socket, nullptr);
  const std::string& path = f.socket->path();
  std::vector<int> silent;
  v1::LocalReply refusal;
  {
    std::unique_ptr<PidsLimit> limit = PidsLimit::Allowing(2);
    if (limit == nullptr) GTEST_SKIP() << "no pids cgroup can be made here (needs root)";
    for (int i = 0; i < 4 && refusal.code() == 0; ++i) {
      const int fd = testing::ConnectUnix(path);
      silent.push_back(fd);
      if (i >= 2) refusal = testing::ReadLocalReply(fd);
    }
  }
  EXPECT_EQ(refusal.code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_NE(refusal.message().find("cannot start a thread"), std::string::npos)
      << refusal.message();
  for (int fd : silent) close(fd);
  ASSERT_TRUE(ConnectionsBecome(*f.socket, 0));
  v1::LocalReply reply;
  const int speaks = Hello(path, f.tickets, Named("alice"), &reply);
  EXPECT_EQ(reply.code(), 0) << reply.message();
  close(speaks);
}

}  // namespace
}  // namespace uopd
