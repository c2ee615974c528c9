// The local socket against a real daemon: the hot calls without gRPC answer what their RPCs
// answer, act only as the identity whose ticket opened the connection, and survive whatever a
// local client writes.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/local_channel.h"
#include "client/uopd_client.h"
#include "core/worker/frame_io.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/daemon_requests.h"
#include "tests/testing/local_socket_client.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::DaemonProcess;
using testing::HeavyKernel;
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;

// A daemon on a unix socket, whose local socket is then PATH.local.
struct UnixDaemon {
  explicit UnixDaemon(const std::string& name, std::vector<std::string> flags = {})
      : dir(testing::TempDir(name)), socket(dir + "/uopd.sock") {
    flags.push_back("--listen=unix:" + socket);
    daemon = std::make_unique<DaemonProcess>(UOPD_DAEMON_PATH, dir + "/cache", flags);
  }
  std::string address() const { return "unix:" + socket; }
  std::string local_socket() const { return socket + ".local"; }

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

TEST(LocalSocket, RunsPlansAsRunPlanDoesAndSitsBesideTheUnixSocketOwnerOnly) {
  UnixDaemon d("local-socket");
  ASSERT_TRUE(d.daemon->running());
  struct stat info;
  ASSERT_EQ(stat(d.local_socket().c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0600);

  Client client(d.address());
  const std::string plan = PrepareScale(client, 64);
  auto channel = LocalChannel::Open(client);
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
  // Recorded beside the RPCs, by method and code.
  const std::string metrics = d.daemon->ScrapeMetrics();
  EXPECT_NE(metrics.find(R"(code="OK",method="Local.RunPlan")"), std::string::npos);
  EXPECT_NE(metrics.find(R"(code="NOT_FOUND",method="Local.RunPlan")"), std::string::npos);
}

TEST(LocalSocket, BuffersAndExecuteAnswerAsTheirRpcsDo) {
  UnixDaemon d("local-socket-buffers");
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  LocalChannel& local = **channel;

  std::string data(16 * sizeof(float), '\0');
  for (int i = 0; i < 16; ++i) {
    const float v = static_cast<float>(i);
    std::memcpy(data.data() + i * sizeof(float), &v, sizeof(float));
  }
  auto in = local.CreateBuffer("CPU", DType::FLOAT32, 16);
  auto out = local.CreateBuffer("CPU", DType::FLOAT32, 16);
  UOPD_ASSERT_OK(in);
  UOPD_ASSERT_OK(out);
  UOPD_ASSERT_OK(local.WriteBufferSmall(*in, data));
  // The buffers are the client's own: gRPC sees them too.
  auto back = client.ReadBufferSmall(*in);
  UOPD_ASSERT_OK(back);
  EXPECT_EQ(*back, data);

  const v1::ExecuteRequest execute = testing::ExecuteOf(ScaleKernel(16, 3.0), {*out, *in});
  auto executed = local.Execute(execute);
  UOPD_ASSERT_OK(executed);
  EXPECT_EQ(executed->timings_size(), 1);
  auto result = local.ReadBufferSmall(*out, 15 * sizeof(float), sizeof(float));
  UOPD_ASSERT_OK(result);
  float last;
  std::memcpy(&last, result->data(), sizeof(float));
  EXPECT_EQ(last, 45.0f);

  // The RPCs' errors, naming the same things.
  EXPECT_TRUE(StatusIs(local.ReadBufferSmall(*out, 1 << 20), absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(
      StatusIs(local.CreateBuffer("CPU", DType::FLOAT32, -1), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(StatusIs(local.CreateBuffer("TPU:7", DType::FLOAT32, 4),
                       absl::StatusCode::kInvalidArgument, {"TPU:7"}));
  v1::ExecuteRequest bad = execute;
  bad.mutable_kernels(0)->mutable_ast()->mutable_nodes(0)->set_op(v1::Node::ADD);
  EXPECT_TRUE(StatusIs(local.Execute(bad), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(StatusIs(local.Call(v1::LocalCall()), absl::StatusCode::kInvalidArgument,
                       {"names no method"}));
  UOPD_ASSERT_OK(local.FreeBuffer(*in));
  EXPECT_TRUE(StatusIs(local.FreeBuffer(*in), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(client.ReadBufferSmall(*in), absl::StatusCode::kNotFound));

  // Another identity sees none of it, over its channel or gRPC.
  Client other(d.address());
  auto theirs = LocalChannel::Open(other);
  UOPD_ASSERT_OK(theirs);
  EXPECT_TRUE(StatusIs((*theirs)->ReadBufferSmall(*out), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs((*theirs)->FreeBuffer(*out), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs((*theirs)->Execute(execute), absl::StatusCode::kNotFound));
  UOPD_EXPECT_OK(local.ReadBufferSmall(*out));
}

// As over gRPC (Security.ALargeRequestOverTheQuotaIsRefusedBeforeItIsParsed): a large call's
// parse is charged to the caller before the frame is parsed, and after a refusal the caller's
// next large calls are refused unread for a while; its small ones are served. The frame was
// parsed first before, whatever the caller's quota.
TEST(LocalSocket, ALargeCallOverTheQuotaIsRefusedBeforeItIsParsed) {
  UnixDaemon d("local-socket-large", {"--max_client_bytes=33554432"});
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  auto out = (*channel)->CreateBuffer("CPU", DType::FLOAT32, 64);
  UOPD_ASSERT_OK(out);
  const v1::ExecuteRequest heavy = testing::ExecuteOf(HeavyKernel(64, 35000), {*out});
  ASSERT_GT(heavy.ByteSizeLong(), size_t{2} << 20);  // x16 for the parse: past 32 MiB
  ASSERT_LT(heavy.ByteSizeLong(), size_t{4} << 20);  // within a frame
  EXPECT_TRUE(StatusIs((*channel)->Execute(heavy), absl::StatusCode::kResourceExhausted,
                       {"parsing a request of", "over its limit of 33554432"}));
  EXPECT_TRUE(StatusIs((*channel)->Execute(heavy), absl::StatusCode::kResourceExhausted,
                       {"refused unread", "parsing a request of"}));
  auto in = (*channel)->CreateBuffer("CPU", DType::FLOAT32, 64);
  UOPD_ASSERT_OK(in);
  UOPD_EXPECT_OK((*channel)->Execute(testing::ExecuteOf(ScaleKernel(64, 2.0), {*out, *in})));
}

TEST(LocalSocket, AConnectionActsOnlyAsTheIdentityWhoseTicketOpenedIt) {
  UnixDaemon d("local-socket-identity");
  ASSERT_TRUE(d.daemon->running());
  Client owner(d.address());
  Client other(d.address());  // another connection: another anonymous identity
  const std::string plan = PrepareScale(owner, 16);

  auto others_channel = LocalChannel::Open(other);
  UOPD_ASSERT_OK(others_channel);
  EXPECT_TRUE(StatusIs((*others_channel)->RunPlan(RunOf(plan)), absl::StatusCode::kNotFound));

  // A ticket is good for one connection, and only a ticket opens one.
  auto opened = owner.OpenLocalChannel();
  UOPD_ASSERT_OK(opened);
  EXPECT_EQ(opened->path(), d.local_socket());
  EXPECT_GT(opened->ticket_seconds(), 0);
  auto first = LocalChannel::Connect(opened->path(), opened->ticket());
  UOPD_ASSERT_OK(first);
  UOPD_EXPECT_OK((*first)->RunPlan(RunOf(plan)));
  EXPECT_TRUE(StatusIs(LocalChannel::Connect(opened->path(), opened->ticket()),
                       absl::StatusCode::kUnauthenticated, {"already used"}));
  EXPECT_TRUE(StatusIs(LocalChannel::Connect(opened->path(), "0123456789abcdef0123456789abcdef"),
                       absl::StatusCode::kUnauthenticated));
}

TEST(LocalSocket, WhatALocalClientWritesGetsAnErrorAndTheDaemonServesOn) {
  UnixDaemon d("local-socket-probes");
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  const std::string plan = PrepareScale(client, 16);
  bool closed = false;

  // A call before any hello.
  int fd = testing::ConnectUnix(d.local_socket());
  v1::LocalCall call;
  *call.mutable_run_plan() = RunOf(plan);
  const std::string call_bytes = call.SerializeAsString();
  UOPD_ASSERT_OK(WriteFrame(fd, {call_bytes}));
  v1::LocalReply reply = testing::ReadLocalReply(fd, &closed);
  EXPECT_NE(reply.code(), 0);
  EXPECT_TRUE(closed);
  close(fd);

  // A header that claims a frame of 2^60 bytes, after a good hello.
  auto opened = client.OpenLocalChannel();
  UOPD_ASSERT_OK(opened);
  fd = testing::ConnectUnix(d.local_socket());
  v1::LocalHello hello;
  hello.set_ticket(opened->ticket());
  UOPD_ASSERT_OK(WriteFrame(fd, {hello.SerializeAsString()}));
  EXPECT_EQ(testing::ReadLocalReply(fd).code(), 0);
  const uint32_t count = 1;
  const uint64_t huge = uint64_t{1} << 60;
  ASSERT_EQ(send(fd, &count, sizeof(count), 0), static_cast<ssize_t>(sizeof(count)));
  ASSERT_EQ(send(fd, &huge, sizeof(huge), 0), static_cast<ssize_t>(sizeof(huge)));
  reply = testing::ReadLocalReply(fd, &closed);
  EXPECT_EQ(reply.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(reply.message().find("more than"), std::string::npos) << reply.message();
  EXPECT_TRUE(closed);
  close(fd);

  // Bytes that are not a LocalCall, then a good call on the same connection.
  opened = client.OpenLocalChannel();
  UOPD_ASSERT_OK(opened);
  fd = testing::ConnectUnix(d.local_socket());
  hello.set_ticket(opened->ticket());
  UOPD_ASSERT_OK(WriteFrame(fd, {hello.SerializeAsString()}));
  EXPECT_EQ(testing::ReadLocalReply(fd).code(), 0);
  UOPD_ASSERT_OK(WriteFrame(fd, {std::string("\xff\xff\xff\xff garbage", 12)}));
  reply = testing::ReadLocalReply(fd);
  EXPECT_EQ(reply.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  UOPD_ASSERT_OK(WriteFrame(fd, {call_bytes}));
  EXPECT_EQ(testing::ReadLocalReply(fd).code(), 0);
  close(fd);

  // Half a frame, then the client vanishes; and a connection that never says hello.
  fd = testing::ConnectUnix(d.local_socket());
  ASSERT_EQ(send(fd, &count, 2, 0), 2);
  close(fd);
  int silent = testing::ConnectUnix(d.local_socket());

  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(plan)));
  close(silent);
}

TEST(LocalSocket, ARunStopsAtItsTimeoutAndTheDaemonServesOn) {
  UnixDaemon d("local-socket-timeout");
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
  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(RunOf(heavy->plan_id(), false), absl::Milliseconds(200)),
                       absl::StatusCode::kDeadlineExceeded));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // The daemon stops the kernels (at the deadline, or once the client hangs up on a reply that
  // came too late) and serves on: on the same connection if its answer came in time.
  if ((*channel)->broken()) {
    channel = LocalChannel::Open(client);
    UOPD_ASSERT_OK(channel);
  }
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(quick), absl::Seconds(20)));
}

// Stops a process (SIGSTOP) and returns once it is stopped: the signal lands a moment after
// kill() returns, and one of the daemon's threads may answer a call meanwhile.
void Pause(pid_t pid) {
  kill(pid, SIGSTOP);
  for (int i = 0; i < 2000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() &&
        (line[paren + 2] == 'T' || line[paren + 2] == 't')) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "process " << pid << " did not stop";
}

TEST(LocalSocket, CallsKeepTheirDeadlinesWhenTheDaemonStalls) {
  UnixDaemon d("local-socket-stall");
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  const std::string plan = PrepareScale(client, 16);
  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  Pause(d.daemon->pid());
  // One call waits on the stopped daemon, holding the connection; one behind it still ends at
  // its own deadline, and the first at its own (plus a second's grace for the daemon's reply).
  absl::Status holder;
  std::thread holding(
      [&] { holder = (*channel)->RunPlan(RunOf(plan), absl::Milliseconds(500)).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(RunOf(plan), absl::Milliseconds(200)),
                       absl::StatusCode::kDeadlineExceeded, {"other calls held"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  holding.join();
  EXPECT_TRUE(StatusIs(holder, absl::StatusCode::kDeadlineExceeded, {"no reply in time"}));
  EXPECT_TRUE((*channel)->broken());
  kill(d.daemon->pid(), SIGCONT);
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(RunOf(plan)), absl::StatusCode::kUnavailable,
                       {"open a new one"}));
  auto reopened = LocalChannel::Open(client);
  UOPD_ASSERT_OK(reopened);
  UOPD_EXPECT_OK((*reopened)->RunPlan(RunOf(plan)));
}

TEST(LocalSocket, ADaemonWithoutOneSaysSoAndOneWithIdleChannelsStopsCleanly) {
  DaemonProcess none(UOPD_DAEMON_PATH, testing::TempDir("local-socket-none"), {"--local_socket="});
  ASSERT_TRUE(none.running());
  Client none_client(none.address());
  EXPECT_TRUE(StatusIs(LocalChannel::Open(none_client), absl::StatusCode::kFailedPrecondition,
                       {"--local_socket"}));
  // On loopback TCP it has one by default, in a directory only its user can enter.
  DaemonProcess tcp(UOPD_DAEMON_PATH, testing::TempDir("local-socket-tcp"));
  ASSERT_TRUE(tcp.running());
  Client tcp_client(tcp.address());
  auto tcp_channel = LocalChannel::Open(tcp_client);
  UOPD_ASSERT_OK(tcp_channel);
  UOPD_EXPECT_OK((*tcp_channel)->RunPlan(RunOf(PrepareScale(tcp_client, 16))));
  auto opened = tcp_client.OpenLocalChannel();
  UOPD_ASSERT_OK(opened);
  EXPECT_TRUE(absl::EndsWith(opened->path(), absl::StrCat("/uopd-", tcp.pid(), ".local")))
      << opened->path();
  struct stat dir_info;
  const std::string dir = opened->path().substr(0, opened->path().rfind('/'));
  ASSERT_EQ(stat(dir.c_str(), &dir_info), 0);
  EXPECT_EQ(dir_info.st_mode & 0777, 0700);
  EXPECT_EQ(dir_info.st_uid, getuid());

  UnixDaemon d("local-socket-drain");
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(PrepareScale(client, 16))));
  EXPECT_EQ(d.daemon->Stop(), 0);  // SIGTERM with a channel open: a clean exit, not a kill
  struct stat info;
  EXPECT_NE(stat(d.local_socket().c_str(), &info), 0) << "the socket file is removed";
  EXPECT_TRUE(StatusIs((*channel)->RunPlan(RunOf("plan-x")), absl::StatusCode::kUnavailable));
}

TEST(LocalSocket, AConnectionIdlePastItsTimeoutIsClosedAndItsSlotGoesBack) {
  UnixDaemon d("local-socket-idle", {"--local_socket_idle_timeout=1s"});
  ASSERT_TRUE(d.daemon->running());
  Client client(d.address());
  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  const std::string plan = PrepareScale(client, 16);
  UOPD_EXPECT_OK((*channel)->RunPlan(RunOf(plan)));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  // Found closed before the call went out: the caller may send it again on a new channel.
  EXPECT_TRUE(
      StatusIs((*channel)->RunPlan(RunOf(plan)), absl::StatusCode::kUnavailable, {"not sent"}));
  EXPECT_TRUE((*channel)->broken());
  auto fresh = LocalChannel::Open(client);
  UOPD_ASSERT_OK(fresh);
  UOPD_EXPECT_OK((*fresh)->RunPlan(RunOf(plan)));
  // A connection that calls within the timeout keeps going.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    UOPD_EXPECT_OK((*fresh)->RunPlan(RunOf(plan)));
  }
}

}  // namespace
}  // namespace uopd
