// Calls that hold server threads, against a real daemon: one client's calls in flight are
// bounded (past the bound it is refused at once, and other clients are served), a stream that
// goes silent is cancelled, and the threads all streams together hold are bounded.
#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/uopd_client.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "uopd/v1/kernel_service.grpc.pb.h"

namespace uopd {
namespace {

using testing::DaemonProcess;

constexpr char kAliceToken[] = "alice-token-0d3c8e1f2a";
constexpr char kBobToken[] = "bob-token-7e6a5b4c3d";

std::string IdentitiesFile(const std::string& dir) {
  const std::string path = dir + "/identities";
  std::ofstream(path) << "alice compile,run token:" << kAliceToken << "\n"
                      << "bob   compile,run token:" << kBobToken << "\n";
  return path;
}

// Threads of process `pid` (from /proc).
int ThreadsOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    int threads = 0;
    if (line.rfind("Threads:", 0) == 0 && absl::SimpleAtoi(line.substr(8), &threads)) {
      return threads;
    }
  }
  return -1;
}

// A WriteBuffer stream opened and left silent: it holds a server thread until it ends.
struct IdleStream {
  IdleStream(v1::KernelService::Stub& stub, const std::string& token) {
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    writer = stub.WriteBuffer(&context, &response);
  }
  ~IdleStream() { context.TryCancel(); }
  grpc::ClientContext context;
  v1::WriteBufferResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::WriteBufferChunk>> writer;
};

std::unique_ptr<v1::KernelService::Stub> StubFor(const DaemonProcess& daemon) {
  return v1::KernelService::NewStub(
      grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
}

// Waits until the daemon has `n` calls of `method` in flight (its handlers started).
void WaitForThreadsAbove(pid_t pid, int n) {
  for (int i = 0; i < 200 && ThreadsOf(pid) < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST(CallLimits, AClientPastItsCallsInFlightIsRefusedAndOthersAreServed) {
  const std::string dir = testing::TempDir("call-limits");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/cache",
                       {"--identities=" + IdentitiesFile(dir), "--max_calls_per_client=4"});
  ASSERT_TRUE(daemon.running());
  auto stub = StubFor(daemon);
  const int before = ThreadsOf(daemon.pid());
  std::vector<std::unique_ptr<IdleStream>> held;
  for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<IdleStream>(*stub, kAliceToken));
  WaitForThreadsAbove(daemon.pid(), before + 4);

  // A fifth call of alice's, of any method, is refused at once, naming the bound.
  ClientOptions alice_options;
  alice_options.token = kAliceToken;
  Client alice(daemon.address(), alice_options);
  auto refused = alice.CreateBuffer("CPU", v1::DType::FLOAT32, 4);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("--max_calls_per_client"), std::string::npos)
      << refused.status();
  // bob is another client: served.
  ClientOptions bob_options;
  bob_options.token = kBobToken;
  Client bob(daemon.address(), bob_options);
  EXPECT_TRUE(bob.CreateBuffer("CPU", v1::DType::FLOAT32, 4).ok());
  // Once alice's streams end, her calls are served again.
  held.clear();
  absl::StatusOr<std::string> again = absl::UnknownError("not tried");
  for (int i = 0; i < 100 && !again.ok(); ++i) {
    again = alice.CreateBuffer("CPU", v1::DType::FLOAT32, 4);
    if (!again.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST(CallLimits, AStreamThatSendsNothingIsCancelledAndGivesItsThreadBack) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("stream-idle"),
                       {"--stream_idle_timeout=1s"});
  ASSERT_TRUE(daemon.running());
  auto stub = StubFor(daemon);
  const int before = ThreadsOf(daemon.pid());
  const auto start = std::chrono::steady_clock::now();
  IdleStream stream(*stub, "");
  WaitForThreadsAbove(daemon.pid(), before + 1);
  // The daemon ends the call: Finish returns without the client sending or closing anything.
  grpc::Status status = stream.writer->Finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(status.ok());
  EXPECT_LT(seconds, 10.0) << "the stream was held " << seconds << " s";
  EXPECT_GE(seconds, 0.9);
}

TEST(CallLimits, IdleStreamsPastTheThreadBoundAreRefusedNotGivenAThreadEach) {
  // 300 silent streams from one anonymous host, with a per-client bound high enough not to
  // matter: the daemon's threads stay near --max_rpc_threads, and a call after the flood is
  // served once the streams end.
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("stream-threads"),
                       {"--max_rpc_threads=32", "--max_calls_per_client=0"});
  ASSERT_TRUE(daemon.running());
  const int before = ThreadsOf(daemon.pid());
  std::vector<std::unique_ptr<v1::KernelService::Stub>> stubs;
  std::vector<std::unique_ptr<IdleStream>> held;
  for (int c = 0; c < 10; ++c) {  // several connections: streams per connection are bounded too
    stubs.push_back(StubFor(daemon));
    for (int i = 0; i < 30; ++i) held.push_back(std::make_unique<IdleStream>(*stubs.back(), ""));
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const int during = ThreadsOf(daemon.pid());
  EXPECT_LT(during - before, 64) << "threads " << before << " -> " << during;
  held.clear();
  Client client(daemon.address());
  absl::StatusOr<v1::ListDevicesResponse> devices = absl::UnknownError("not tried");
  for (int i = 0; i < 100 && !devices.ok(); ++i) {
    devices = client.ListDevices();
    if (!devices.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(devices.ok()) << devices.status();
}

// ListDevices on a fresh connection with a short deadline.
grpc::Status ListDevicesOnANewConnection(const DaemonProcess& daemon) {
  auto stub = StubFor(daemon);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  v1::ListDevicesRequest request;
  v1::ListDevicesResponse response;
  return stub->ListDevices(&context, request, &response);
}

TEST(CallLimits, ConnectionsPastTheDescriptorLimitAreRefusedAndTheListenerLives) {
  // A daemon allowed 256 descriptors, and 400 connections that send nothing: the ones past
  // what the daemon can hold are closed at once (gRPC 1.51's listener, left alone, stops
  // accepting for good at its first EMFILE). Once they go, a new client is served.
  constexpr int kLimit = 256;
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("descriptors"), {}, kLimit);
  ASSERT_TRUE(daemon.running());
  ASSERT_TRUE(ListDevicesOnANewConnection(daemon).ok());
  std::vector<int> held;
  for (int i = 0; i < 400; ++i) {
    const int fd = DaemonProcess::ConnectTcp(daemon.address());
    if (fd >= 0) held.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  int refused = 0;  // connections the daemon closed
  for (int fd : held) {
    char byte;
    if (recv(fd, &byte, 1, MSG_DONTWAIT) == 0) ++refused;
  }
  EXPECT_GT(refused, 400 - kLimit) << "the daemon never closed a connection it could not hold";
  for (int fd : held) close(fd);
  grpc::Status after = grpc::Status(grpc::StatusCode::UNKNOWN, "not tried");
  for (int i = 0; i < 10 && !after.ok(); ++i) after = ListDevicesOnANewConnection(daemon);
  EXPECT_TRUE(after.ok()) << after.error_message();
  EXPECT_GE(daemon.Metric("uopd_connections_refused_total"), refused);
}

}  // namespace
}  // namespace uopd
