// A raw client of the daemon's local socket (server/local_socket.h), for tests that send what
// no well-behaved client sends or hold connections open to probe the socket's bounds.
#ifndef UOPD_TESTS_TESTING_LOCAL_SOCKET_CLIENT_H_
#define UOPD_TESTS_TESTING_LOCAL_SOCKET_CLIENT_H_

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "core/worker/frame_io.h"
#include "gtest/gtest.h"
#include "uopd/v1/kernel_service.pb.h"

namespace uopd::testing {

// A connected unix socket to `path` (the test fails if it cannot connect).
inline int ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// The next reply on `fd` (of at most 1 MiB: the tests read hellos, refusals and small calls), then,
// when asked, whether the daemon closed the connection after it.
inline v1::LocalReply ReadLocalReply(int fd, bool* closed_after = nullptr) {
  v1::LocalReply reply;
  auto frame = ReadFrame(fd, 1 << 20);
  EXPECT_TRUE(frame.ok()) << frame.status();
  if (frame.ok() && frame->size() == 1) {
    EXPECT_TRUE(reply.ParseFromString((*frame)[0]));
  }
  if (closed_after != nullptr) {
    char byte;
    *closed_after = recv(fd, &byte, 1, 0) == 0;
  }
  return reply;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_LOCAL_SOCKET_CLIENT_H_
