// Sessions against a real daemon: the buffers and plans a client makes in its session (over
// gRPC and the local socket) are freed, and their quota with them, as soon as the session's
// call ends: closed by the client, or its process killed. Only the session's owner can name it,
// sessions are bounded, and an open session holds no thread of the daemon.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/local_channel.h"
#include "client/uopd_client.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::DaemonProcess;
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;

constexpr int64_t kBufferBytes = 300'000;
// Set in the child process of ProcessKilled: the daemon it makes its session on.
constexpr char kChildAddressVariable[] = "UOPD_SESSION_TEST_CHILD_ADDRESS";

ClientOptions WithSession() {
  ClientOptions options;
  options.session = true;
  return options;
}

// Waits up to `seconds` for `done`; true if it came.
bool Eventually(const std::function<bool()>& done, double seconds = 5) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A plan scaling buffer `in` into `out` (both FLOAT32 handles of `n` elements).
absl::StatusOr<v1::PrepareResponse> PrepareScale(Client& client, const std::string& out,
                                                 const std::string& in, int64_t n) {
  v1::PrepareRequest prepare;
  prepare.add_buffers()->set_handle(out);
  prepare.add_buffers()->set_handle(in);
  auto* kernel = prepare.add_kernels();
  *kernel->mutable_ast() = ScaleKernel(n, 2.0);
  kernel->add_buffers(0);
  kernel->add_buffers(1);
  return client.Prepare(prepare);
}

// Makes, in `client`'s session, two buffers over gRPC, one over the local socket and a plan
// over two of them: 3 * kBufferBytes of its quota.
void MakeResources(Client& client) {
  constexpr int64_t n = kBufferBytes / 4;
  auto out = client.CreateBuffer("CPU", DType::FLOAT32, n);
  auto in = client.CreateBuffer("CPU", DType::FLOAT32, n);
  UOPD_ASSERT_OK(out);
  UOPD_ASSERT_OK(in);
  auto channel = LocalChannel::Open(client);
  UOPD_ASSERT_OK(channel);
  auto session = client.Session();
  UOPD_ASSERT_OK(session);
  ASSERT_FALSE(session->empty());
  UOPD_ASSERT_OK((*channel)->CreateBuffer("CPU", DType::FLOAT32, n, "", *session));
  UOPD_ASSERT_OK(PrepareScale(client, *out, *in, n));
}

// A channel of its own (so another anonymous identity than any Client's), for calls with
// metadata of the test's choosing.
std::unique_ptr<v1::KernelService::Stub> RawStub(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return v1::KernelService::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

int DaemonThreads(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int threads = 0;
    if (line.rfind("Threads:", 0) == 0 && absl::SimpleAtoi(line.substr(8), &threads)) {
      return threads;
    }
  }
  return -1;
}

TEST(Session, EndingItFreesItsBuffersAndPlansAndTheirQuotaAtOnce) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("session-close"),
                       {"--max_client_bytes=1000000"});
  ASSERT_TRUE(daemon.running());
  // Made outside any session, by a client that then goes: kept, as before sessions.
  {
    Client old_style(daemon.address());
    UOPD_ASSERT_OK(old_style.CreateBuffer("CPU", DType::UINT8, 1000));
  }
  Client client(daemon.address(), WithSession());
  MakeResources(client);
  EXPECT_EQ(daemon.Metric("uopd_buffers"), 4);
  EXPECT_EQ(daemon.Metric("uopd_plans"), 1);
  EXPECT_EQ(daemon.Metric("uopd_sessions"), 1);
  // Anonymous clients of one host share one quota: 901 kB of its 1 MB are taken.
  Client other(daemon.address());
  EXPECT_TRUE(StatusIs(other.CreateBuffer("CPU", DType::UINT8, kBufferBytes),
                       absl::StatusCode::kResourceExhausted, {"over its limit"}));

  client.CloseSession();  // the call is cancelled
  EXPECT_TRUE(Eventually([&] { return daemon.Metric("uopd_buffers") == 1; }))
      << daemon.Metric("uopd_buffers");
  EXPECT_EQ(daemon.Metric("uopd_plans"), 0);
  EXPECT_EQ(daemon.Metric("uopd_sessions"), 0);
  EXPECT_EQ(daemon.Metric("uopd_sessions_ended_total"), 1);
  EXPECT_EQ(daemon.Metric("uopd_session_freed_total"), 4) << "three buffers and a plan";
  // The quota is free again.
  UOPD_EXPECT_OK(other.CreateBuffer("CPU", DType::UINT8, kBufferBytes));
  // The client goes on in a new session.
  UOPD_EXPECT_OK(client.CreateBuffer("CPU", DType::UINT8, 10));
  EXPECT_EQ(daemon.Metric("uopd_sessions"), 1);
  EXPECT_NE(daemon.ScrapeMetrics().find(R"(code="OK",method="OpenSession")"), std::string::npos);
  // SIGTERM with a session open: a clean, prompt exit (the session is no call to drain).
  const auto stopping = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon.Stop(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(10));
}

// Not a test of its own: the child process of ProcessKilled (skipped when run otherwise).
TEST(SessionChild, HoldsItsSessionUntilKilled) {
  const char* address = std::getenv(kChildAddressVariable);
  if (address == nullptr) GTEST_SKIP() << "run by Session.ProcessKilled in a child process";
  Client client(address, WithSession());
  MakeResources(client);
  if (HasFatalFailure()) return;
  std::puts("ready");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(60));
}

TEST(Session, AKilledClientsSessionEndsWithItsProcess) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("session-kill"),
                       {"--max_client_bytes=1000000"});
  ASSERT_TRUE(daemon.running());
  // The child is this test binary again, running SessionChild: a process that never cancels
  // anything, whose connection the kernel closes when it is killed.
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t child = fork();
  if (child == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    setenv(kChildAddressVariable, daemon.address().c_str(), 1);
    execl("/proc/self/exe", "session_test", "--gtest_filter=SessionChild.*", nullptr);
    _exit(127);
  }
  close(out[1]);
  FILE* from_child = fdopen(out[0], "r");
  char line[4096];
  bool ready = false;
  while (!ready && std::fgets(line, sizeof(line), from_child) != nullptr) {
    ready = std::string(line) == "ready\n";
  }
  std::fclose(from_child);
  ASSERT_TRUE(ready) << "the child made no session";
  EXPECT_EQ(daemon.Metric("uopd_buffers"), 3);
  EXPECT_EQ(daemon.Metric("uopd_plans"), 1);
  Client other(daemon.address());
  EXPECT_TRUE(StatusIs(other.CreateBuffer("CPU", DType::UINT8, kBufferBytes),
                       absl::StatusCode::kResourceExhausted));

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(Eventually([&] { return daemon.Metric("uopd_buffers") == 0; }))
      << daemon.Metric("uopd_buffers");
  EXPECT_EQ(daemon.Metric("uopd_plans"), 0);
  EXPECT_EQ(daemon.Metric("uopd_sessions"), 0);
  UOPD_EXPECT_OK(other.CreateBuffer("CPU", DType::UINT8, kBufferBytes));
}

TEST(Session, OnlyItsOwnerNamesItAndNoOneElseEndsIt) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("session-owner"));
  ASSERT_TRUE(daemon.running());
  Client owner(daemon.address(), WithSession());
  auto mine = owner.CreateBuffer("CPU", DType::UINT8, 4, "abcd");
  UOPD_ASSERT_OK(mine);
  auto session = owner.Session();
  UOPD_ASSERT_OK(session);
  ASSERT_EQ(session->size(), 5 + 32) << *session;

  // Another identity (another anonymous connection) naming it, over gRPC and the local socket.
  auto stub = RawStub(daemon.address());
  v1::CreateBufferRequest create;
  create.set_dtype(DType::UINT8);
  create.set_size(4);
  {
    grpc::ClientContext context;
    context.AddMetadata("uopd-session", *session);
    v1::CreateBufferResponse created;
    const grpc::Status status = stub->CreateBuffer(&context, create, &created);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
    EXPECT_NE(status.error_message().find("no open session"), std::string::npos);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("uopd-session", *session);
    v1::PrepareRequest prepare;
    prepare.add_buffers()->mutable_inline_()->set_dtype(DType::FLOAT32);
    prepare.mutable_buffers(0)->mutable_inline_()->set_size(4);
    prepare.add_buffers()->mutable_inline_()->set_dtype(DType::FLOAT32);
    prepare.mutable_buffers(1)->mutable_inline_()->set_size(4);
    auto* kernel = prepare.add_kernels();
    *kernel->mutable_ast() = ScaleKernel(4, 2.0);
    kernel->add_buffers(0);
    kernel->add_buffers(1);
    v1::PrepareResponse prepared;
    EXPECT_EQ(stub->Prepare(&context, prepare, &prepared).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  Client other(daemon.address());
  auto theirs = LocalChannel::Open(other);
  UOPD_ASSERT_OK(theirs);
  EXPECT_TRUE(StatusIs((*theirs)->CreateBuffer("CPU", DType::UINT8, 4, "", *session),
                       absl::StatusCode::kNotFound, {"no open session"}));
  // A made-up session is the same NOT_FOUND, for the owner too.
  auto own_channel = LocalChannel::Open(owner);
  UOPD_ASSERT_OK(own_channel);
  EXPECT_TRUE(StatusIs((*own_channel)->CreateBuffer("CPU", DType::UINT8, 4, "", "sess-0"),
                       absl::StatusCode::kNotFound));
  // Nothing was made, and the owner's session and buffer are untouched.
  EXPECT_EQ(daemon.Metric("uopd_buffers"), 1);
  EXPECT_EQ(daemon.Metric("uopd_sessions"), 1);
  auto read = owner.ReadBufferSmall(*mine);
  UOPD_ASSERT_OK(read);
  EXPECT_EQ(*read, "abcd");
  // Another identity's session ending ends nothing of the owner's.
  {
    Client gone(daemon.address(), WithSession());
    UOPD_ASSERT_OK(gone.CreateBuffer("CPU", DType::UINT8, 4));
  }
  EXPECT_TRUE(Eventually([&] { return daemon.Metric("uopd_sessions_ended_total") == 1; }));
  UOPD_EXPECT_OK(owner.ReadBufferSmall(*mine));
  EXPECT_EQ(daemon.Metric("uopd_sessions"), 1);
}

TEST(Session, SessionsAreBoundedAndHoldNoThread) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("session-bounds"),
                       {"--max_sessions_per_client=150", "--max_streams_per_connection=200"});
  ASSERT_TRUE(daemon.running());
  auto stub = RawStub(daemon.address());
  struct Open {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::OpenSessionResponse>> reader;
  };
  const int threads_before = DaemonThreads(daemon.pid());
  std::vector<std::unique_ptr<Open>> sessions;
  for (int i = 0; i < 150; ++i) {
    auto open = std::make_unique<Open>();
    // A stream past the connection's stream limit waits in the client: fail, do not hang.
    open->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    open->reader = stub->OpenSession(&open->context, v1::OpenSessionRequest());
    v1::OpenSessionResponse first;
    ASSERT_TRUE(open->reader->Read(&first)) << i << ": " << open->reader->Finish().error_message();
    sessions.push_back(std::move(open));
  }
  EXPECT_EQ(daemon.Metric("uopd_sessions"), 150);
  // 150 sessions open, and the daemon has about the threads it had (gRPC's callback executor
  // may add a few): none per session.
  EXPECT_LT(DaemonThreads(daemon.pid()), threads_before + 20);

  // Past the bound of one quota key (the anonymous callers of this host).
  Client over(daemon.address(), WithSession());
  EXPECT_TRUE(StatusIs(over.CreateBuffer("CPU", DType::UINT8, 4),
                       absl::StatusCode::kResourceExhausted, {"150 sessions open"}));
  EXPECT_NE(daemon.ScrapeMetrics().find(R"(code="RESOURCE_EXHAUSTED",method="OpenSession")"),
            std::string::npos);
  // Ending one makes room.
  sessions.back()->context.TryCancel();
  (void)sessions.back()->reader->Finish();
  sessions.pop_back();
  EXPECT_TRUE(Eventually([&] { return daemon.Metric("uopd_sessions") == 149; }));
  UOPD_EXPECT_OK(over.CreateBuffer("CPU", DType::UINT8, 4));
  for (auto& open : sessions) open->context.TryCancel();
  for (auto& open : sessions) (void)open->reader->Finish();
  EXPECT_TRUE(Eventually([&] { return daemon.Metric("uopd_sessions") == 1; }));
}

}  // namespace
}  // namespace uopd
