// Integration tests of a daemon's life: a real uopd on a loopback port, driven as clients
// drive it, through deep graphs, memory held and released, calls that pass their deadline or are
// cancelled, and a drain.

#include <cstring>
#include <future>
#include <thread>

#include "client/uopd_client.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/daemon_requests.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::CompileOf;
using testing::DaemonProcess;
using testing::GraphBuilder;
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;
using v1::Node;

TEST(Daemon, SurvivesGraphsAtTheDepthLimit) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("deep"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  for (int depth : {19'990, 25'000}) {
    GraphBuilder g;
    int out = g.Buffer(0, DType::FLOAT32, 1);
    int value = g.Float(DType::FLOAT32, 1.0);
    for (int i = 0; i < depth; ++i) value = g.Node(Node::NEG, DType::FLOAT32, {value});
    auto compiled = client.Compile(CompileOf(g.Sink({g.Store(g.Target(out, g.Index(0)), value)})));
    if (depth < 20'000) {
      UOPD_EXPECT_OK(compiled);
    } else {
      EXPECT_TRUE(StatusIs(compiled, absl::StatusCode::kInvalidArgument, {"depth"}));
    }
  }
  UOPD_EXPECT_OK(client.ListDevices());  // still serving
}

TEST(Daemon, ReleasesEveryRequestsMemory) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("leak"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::ExecuteRequest request;
  *request.add_kernels()->mutable_ast() = ScaleKernel(1024, 2.0);
  for (int i = 0; i < 2; ++i) {
    v1::InlineBuffer* buffer = request.add_buffers()->mutable_inline_();
    buffer->set_dtype(DType::FLOAT32);
    buffer->set_size(1024);
    request.mutable_kernels(0)->add_buffers(i);
  }
  request.add_return_buffers(0);
  for (int i = 0; i < 50; ++i) UOPD_ASSERT_OK(client.Execute(request));
  v1::PrepareRequest prepare;
  *prepare.mutable_buffers() = request.buffers();
  *prepare.mutable_kernels() = request.kernels();
  for (int i = 0; i < 20; ++i) {
    auto plan = client.Prepare(prepare);
    UOPD_ASSERT_OK(plan);
    UOPD_ASSERT_OK(client.ReleasePlan(plan->plan_id()));
    auto handle = client.CreateBuffer("CPU", DType::FLOAT32, 1024);
    UOPD_ASSERT_OK(handle);
    UOPD_ASSERT_OK(client.FreeBuffer(*handle));
  }
  EXPECT_EQ(daemon.Metric("uopd_device_bytes_in_use{device=\"CPU\"}"), 0) << daemon.ScrapeMetrics();
  EXPECT_EQ(daemon.Metric("uopd_buffers"), 0);
  EXPECT_EQ(daemon.Metric("uopd_plans"), 0);
  EXPECT_EQ(daemon.Metric("uopd_kernels_executed_total{device=\"CPU\"}"), 50);
}

TEST(Daemon, ReclaimsIdleBuffers) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("ttl"), {"--idle_ttl=1s"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto handle = client.CreateBuffer("CPU", DType::UINT8, 4, "abcd");
  UOPD_ASSERT_OK(handle);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_TRUE(StatusIs(client.ReadBuffer(*handle), absl::StatusCode::kNotFound));
}

// Execute out[0] = sum over k < iterations of in[k % 4], with in = {1, 2, 3, 4} and out
// returned: 2.5 * iterations (modulo 2^32) after as many loop iterations. As written: unrolled
// by 4, its loads no longer depend on the loop and LLVM sums in closed form, in no time.
v1::ExecuteRequest ModSumRequest(int64_t iterations) {
  v1::ExecuteRequest request;
  *request.add_kernels()->mutable_ast() = testing::ModSumKernel(1, {iterations});
  request.mutable_kernels(0)->mutable_optimization()->set_mode(v1::Optimization::NONE);
  for (int64_t size : {1, 4}) {
    v1::InlineBuffer* buffer = request.add_buffers()->mutable_inline_();
    buffer->set_dtype(DType::INT32);
    buffer->set_size(size);
    request.mutable_kernels(0)->add_buffers(request.buffers_size() - 1);
  }
  const int32_t in[4] = {1, 2, 3, 4};
  request.mutable_buffers(1)->mutable_inline_()->set_data(
      std::string(reinterpret_cast<const char*>(in), sizeof(in)));
  request.add_return_buffers(0);
  return request;
}

// A kernel that would run for hours stops when its call passes its deadline: the client hears
// DEADLINE_EXCEEDED, the daemon goes on serving, and a drain does not wait for the kernel.
TEST(Daemon, StopsTheKernelsOfCallsPastTheirDeadline) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("deadline"));
  const v1::ExecuteRequest request = ModSumRequest(int64_t{1} << 44);
  {
    auto stub = v1::KernelService::NewStub(
        grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    v1::ExecuteResponse response;
    EXPECT_EQ(stub->Execute(&context, request, &response).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
    Client client(daemon.address());
    UOPD_EXPECT_OK(client.ListDevices());
  }
  // Were the kernel still running, its call would hold the drain until the daemon is killed.
  EXPECT_EQ(daemon.Stop(), 0);
}

// A client that cancels its call stops the kernel too (the watchdog sees the cancellation, not
// only deadlines).
TEST(Daemon, StopsTheKernelsOfCancelledCalls) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("cancel"));
  const v1::ExecuteRequest request = ModSumRequest(int64_t{1} << 44);
  {
    auto stub = v1::KernelService::NewStub(
        grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;  // no deadline
    std::thread cancel([&context] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      context.TryCancel();
    });
    v1::ExecuteResponse response;
    EXPECT_EQ(stub->Execute(&context, request, &response).error_code(),
              grpc::StatusCode::CANCELLED);
    cancel.join();
  }
  // Were the kernel still running, its call would hold the drain until the daemon is killed.
  EXPECT_EQ(daemon.Stop(), 0);
}

// The standard health service's answer for the whole server: 1 SERVING, 2 NOT_SERVING (the
// status field of grpc.health.v1.HealthCheckResponse, read from its bytes), -1 on failure.
int HealthStatus(const std::string& address) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Slice empty("");  // an empty HealthCheckRequest: the server as a whole
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(status); });
  if (!done.get_future().get().ok()) return -1;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -1;
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes.size() == 2 && bytes[0] == 0x08 ? bytes[1] : -1;
}

// SIGTERM lets the calls in flight finish, refuses new ones with UNAVAILABLE (health says
// NOT_SERVING meanwhile), and ends as soon as the last call has, open connections or not.
TEST(Daemon, DrainFinishesCallsInFlightAndRefusesNewOnes) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("drain"));
  // Seconds of work; 10 modulo 2^32.
  const v1::ExecuteRequest request = ModSumRequest((int64_t{1} << 34) + 4);

  EXPECT_EQ(HealthStatus(daemon.address()), 1) << "SERVING";
  Client client(daemon.address());
  absl::StatusOr<v1::ExecuteResponse> result;
  std::thread call([&] { result = client.Execute(request); });
  // In flight once its kernel is compiled (and runs for seconds): a fixed wait was not always
  // enough on a loaded machine, where the call had not reached its handler yet.
  for (int i = 0; i < 3000 && daemon.Metric("uopd_compilations_total{backend=\"CPU\"}") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(daemon.Metric("uopd_compilations_total{backend=\"CPU\"}"), 1)
      << "the call never started";
  daemon.Terminate();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Client late(daemon.address());
  EXPECT_TRUE(StatusIs(late.ListDevices(), absl::StatusCode::kUnavailable, {"shutting down"}));
  EXPECT_EQ(HealthStatus(daemon.address()), 2) << "NOT_SERVING";
  call.join();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->outputs_size(), 1);
  int32_t sum = 0;
  std::memcpy(&sum, result->outputs(0).data().data(), sizeof(sum));
  EXPECT_EQ(sum, 10);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace uopd
