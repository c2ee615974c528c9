// The run socket against a real daemon: RunPlan without gRPC answers what RunPlan answers, acts
// only as the identity whose ticket opened it, and survives whatever a local client writes.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "client/run_channel.h"
#include "client/uopd_client.h"
#include "core/worker/frame_io.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::DaemonProcess;
using testing::HeavyKernel;
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;

// A daemon on a unix socket, whose run socket is then PATH.run.
struct UnixDaemon {
  explicit UnixDaemon(const std::string& name, std::vector<std::string> flags = {})
      : dir(testing::TempDir(name)), socket(dir + "/uopd.sock") {
    flags.push_back("--listen=unix:" + socket);
    daemon = std::make_unique<DaemonProcess>(UOPD_DAEMON_PATH, dir + "/cache", flags);
  }
  std::string address() const { return "unix:" + socket; }
  std::string run_socket() const { return socket + ".run"; }

  std::string dir;
  std::string socket;
  std::unique_ptr<DaemonProcess> daemon;
};

// A plan of ScaleKernel(n, 2) over inline buffers, input 0, 1, 2, ...; returns its id.
std::string PrepareScale(Client& client, int64_t n) {
  v1::PrepareRequest prepare;
  auto* out = prepare.add_buffers()->mutable_inline_();
  out->set_dtype(DType::FLOAT32);
  out->set_size(n);
  auto* in = prepare.add_buffers()->mutable_inline_();
  in->set_dtype(DType::FLOAT32);
  in->set_size(n);
  std::string data(n * sizeof(float), '\0');
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i);
    std::memcpy(data.data() + i * sizeof(float), &v, sizeof(float));
  }
  in->set_data(data);
  auto* kernel = prepare.add_kernels();
  *kernel->mutable_ast() = ScaleKernel(n, 2.0);
  kernel->add_buffers(0);
  kernel->add_buffers(1);
  auto prepared = client.Prepare(prepare);
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return prepared.ok() ? prepared->plan_id() : "";
}

v1::RunPlanRequest RunOf(const std::string& plan_id, bool return_output = true) {
  v1::RunPlanRequest run;
  run.set_plan_id(plan_id);
  if (return_output) run.add_return_buffers(0);
  return run;
}

// A raw connection to the run socket, for what no well-behaved client sends.
int Connect(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// The reply the daemon sends on `fd`, then whether it closed the connection after it.
v1::RunChannelReply ReplyOn(int fd, bool* closed_after) {
  v1::RunChannelReply reply;
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

TEST(RunSocket, RunsPlansAsRunPlanDoesAndSitsBesideTheUnixSocketOwnerOnly) {
  UnixDaemon d("run-socket");
  ASSERT_TRUE(d.daemon->running());
  struct stat info;
  ASSERT_EQ(stat(d.run_socket().c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0600);

  Client client(d.address());
  const std::string plan = PrepareScale(client, 64);
  auto channel = RunChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  auto over_grpc = client.RunPlan(RunOf(plan));
  UOPD_ASSERT_OK(over_grpc);
  for (int i = 0; i < 3; ++i) {
    auto over_socket = (*channel)->RunPlan(RunOf(plan));
    UOPD_ASSERT_OK(over_socket);
    ASSERT_EQ(over_socket->outputs_size(), 1);
    EXPECT_EQ(over_socket->outputs(0).data(), over_grpc->outputs(0).data());
    float last;
    std::memcpy(&last, over_socket->outputs(0).data().data() + 63 * sizeof(float), sizeof(float));
    EXPECT_EQ(last, 126.0f);
    EXPECT_EQ(over_socket->timings_size(), 1);
  }
  // Errors are RunPlan's, and the connection goes on after them.
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(RunOf("plan-none")), absl::StatusCode::kNotFound,
                       {"plan-none"}));
  v1::RunPlanRequest bad_var = RunOf(plan);
  (*bad_var.mutable_vars())["nope"] = 1;
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(bad_var), absl::StatusCode::kInvalidArgument, {"nope"}));
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(plan)));
}

TEST(RunSocket, AConnectionActsOnlyAsTheIdentityWhoseTicketOpenedIt) {
  UnixDaemon d("run-socket-identity");
  ASSERT_TRUE(d.daemon->running());
  Client owner(d.address());
  Client other(d.address());  // another connection: another anonymous identity
  const std::string plan = PrepareScale(owner, 16);

  auto others_channel = RunChannel::Open(other);
  UOPD_ASSERT_OK(others_channel);
  EXPECT_TRUE(StatusIs((*others_channel)->RunPlan(RunOf(plan)), absl::StatusCode::kNotFound));

  // A ticket is good for one connection, and only a ticket opens one.
  auto opened = owner.OpenRunChannel();
  UOPD_ASSERT_OK(opened);
  EXPECT_EQ(opened->path(), d.run_socket());
  EXPECT_GT(opened->ticket_seconds(), 0);
  auto first = RunChannel::Connect(opened->path(), opened->ticket());
  UOPD_ASSERT_OK(first);
  UOPD_EXPECT_OK((*first)->RunPlan(RunOf(plan)));
  EXPECT_TRUE(StatusIs(RunChannel::Connect(opened->path(), opened->ticket()),
                       absl::StatusCode::kUnauthenticated, {"already used"}));
  EXPECT_TRUE(StatusIs(RunChannel::Connect(opened->path(), "0123456789abcdef0123456789abcdef"),
                       absl::StatusCode::kUnauthenticated));
}

TEST(RunSocket, WhatALocalClientWritesGetsAnErrorAndTheDaemonServesOn) {
  UnixDaemon d("run-socket-probes");
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  const std::string plan = PrepareScale(client, 16);
  bool closed = false;

  // A call before any hello.
  int fd = Connect(d.run_socket());
  v1::RunChannelCall call;
  *call.mutable_run() = RunOf(plan);
  const std::string call_bytes = call.SerializeAsString();
  UOPD_ASSERT_OK(WriteFrame(fd, {call_bytes}));
  v1::RunChannelReply reply = ReplyOn(fd, &closed);
  EXPECT_NE(reply.code(), 0);
  EXPECT_TRUE(closed);
  close(fd);

  // A header that claims a frame of 2^60 bytes, after a good hello.
  auto opened = client.OpenRunChannel();
  UOPD_ASSERT_OK(opened);
  fd = Connect(d.run_socket());
  v1::RunChannelHello hello;
  hello.set_ticket(opened->ticket());
  UOPD_ASSERT_OK(WriteFrame(fd, {hello.SerializeAsString()}));
  EXPECT_EQ(ReplyOn(fd, nullptr).code(), 0);
  const uint32_t count = 1;
  const uint64_t huge = uint64_t{1} << 60;
  ASSERT_EQ(send(fd, &count, sizeof(count), 0), static_cast<ssize_t>(sizeof(count)));
  ASSERT_EQ(send(fd, &huge, sizeof(huge), 0), static_cast<ssize_t>(sizeof(huge)));
  reply = ReplyOn(fd, &closed);
  EXPECT_EQ(reply.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(reply.message().find("more than"), std::string::npos) << reply.message();
  EXPECT_TRUE(closed);
  close(fd);

  // Bytes that are not a RunChannelCall, then a good call on the same connection.
  opened = client.OpenRunChannel();
  UOPD_ASSERT_OK(opened);
  fd = Connect(d.run_socket());
  hello.set_ticket(opened->ticket());
  UOPD_ASSERT_OK(WriteFrame(fd, {hello.SerializeAsString()}));
  EXPECT_EQ(ReplyOn(fd, nullptr).code(), 0);
  UOPD_ASSERT_OK(WriteFrame(fd, {std::string("\xff\xff\xff\xff garbage", 12)}));
  reply = ReplyOn(fd, nullptr);
  EXPECT_EQ(reply.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  UOPD_ASSERT_OK(WriteFrame(fd, {call_bytes}));
  EXPECT_EQ(ReplyOn(fd, nullptr).code(), 0);
  close(fd);

  // Half a frame, then the client vanishes; and a connection that never says hello.
  fd = Connect(d.run_socket());
  ASSERT_EQ(send(fd, &count, 2, 0), 2);
  close(fd);
  int silent = Connect(d.run_socket());

  auto channel = RunChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(plan)));
  close(silent);
}

TEST(RunSocket, ARunStopsAtItsTimeoutAndTheConnectionGoesOn) {
  UnixDaemon d("run-socket-timeout");
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  // Minutes of work at one core: only the timeout ends it in time.
  v1::PrepareRequest prepare;
  for (int i = 0; i < 2; ++i) {
    auto* buffer = prepare.add_buffers()->mutable_inline_();
    buffer->set_dtype(DType::FLOAT32);
    buffer->set_size(int64_t{1} << 24);
  }
  auto* kernel = prepare.add_kernels();
  *kernel->mutable_ast() = HeavyKernel(int64_t{1} << 24, 3000);
  kernel->add_buffers(0);
  kernel->add_buffers(1);
  auto heavy = client.Prepare(prepare);
  UOPD_ASSERT_OK(heavy);
  const std::string quick = PrepareScale(client, 16);
  auto channel = RunChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(RunOf(heavy->plan_id(), false), absl::Milliseconds(200)),
                       absl::StatusCode::kDeadlineExceeded, {"timeout"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(quick)));
}

TEST(RunSocket, ADaemonWithoutOneSaysSoAndOneWithIdleChannelsStopsCleanly) {
  DaemonProcess tcp(UOPD_DAEMON_PATH, testing::TempDir("run-socket-none"));
  ASSERT_TRUE(tcp.running());
  Client tcp_client(tcp.address());
  EXPECT_TRUE(StatusIs(RunChannel::Open(tcp_client), absl::StatusCode::kFailedPrecondition,
                       {"--run_socket"}));

  UnixDaemon d("run-socket-drain");
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  auto channel = RunChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(PrepareScale(client, 16))));
  EXPECT_EQ(d.daemon->Stop(), 0);  // SIGTERM with a channel open: a clean exit, not a kill
  struct stat info;
  EXPECT_NE(stat(d.run_socket().c_str(), &info), 0) << "the socket file is removed";
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(RunOf("plan-x")), absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace uopd
