// KernelService in process, over gRPC's in-process channel, on a device of fakes
// (tests/testing/fake_device.h): what the service does with requests, the program layers and the
// cache, checked without a daemon, LLVM or a GPU. The daemon tests (daemon_test.cc) check the
// same calls end to end on the real backends.
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "core/cache/kernel_cache.h"
#include "core/program/caching_program_source.h"
#include "core/session/identity.h"
#include "core/session/resource_registry.h"
#include "core/util/thread_pool.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "server/kernel_service.h"
#include "tests/testing/fake_device.h"
#include "tests/testing/sample_kernels.h"

namespace uopd {
namespace {

using testing::FakeCounters;
using testing::FakeTier;

class InProcessServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_.Add(testing::FakeDevice(counters_));
    auto tier = std::make_unique<FakeTier>();
    tier_ = tier.get();
    std::vector<std::unique_ptr<CacheTier>> tiers;
    tiers.push_back(std::move(tier));
    cache_ = std::make_unique<KernelCache>(std::move(tiers));
    programs_ = std::make_unique<CachingProgramSource>(*cache_);
    service_ = std::make_unique<KernelServiceImpl>(
        ServiceContext{.devices = devices_,
                       .programs = *programs_,
                       .resources = resources_,
                       .pool = &pool_,
                       .metrics = nullptr,
                       .limits = {},
                       .target_compilers = [](const std::string& base,
                                              const std::string&) -> absl::StatusOr<CompilerPair> {
                         return absl::FailedPreconditionError("no compilers for " + base + " here");
                       }});
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::KernelService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override { server_->Shutdown(); }

  // out = a + b over 4 floats, run once through Execute.
  grpc::Status ExecuteAdd(std::vector<float>* out) {
    v1::ExecuteRequest request;
    request.set_device("CPU");
    const std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40};
    for (const std::vector<float>* data :
         {static_cast<const std::vector<float>*>(nullptr), &a, &b}) {
      v1::InlineBuffer* buffer = request.add_buffers()->mutable_inline_();
      buffer->set_dtype(v1::DType::FLOAT32);
      buffer->set_size(4);
      if (data != nullptr) buffer->set_data(data->data(), data->size() * sizeof(float));
    }
    v1::KernelInvocation* kernel = request.add_kernels();
    *kernel->mutable_ast() = testing::AddKernel(4);
    for (int slot = 0; slot < 3; ++slot) kernel->add_buffers(slot);
    request.add_return_buffers(0);
    v1::ExecuteResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->Execute(&context, request, &response);
    if (status.ok() && response.outputs_size() == 1) {
      const std::string& bytes = response.outputs(0).data();
      out->assign(reinterpret_cast<const float*>(bytes.data()),
                  reinterpret_cast<const float*>(bytes.data() + bytes.size()));
    }
    return status;
  }

  grpc::Status Compile(const v1::Graph& ast, v1::CompileResponse* response) {
    v1::CompileRequest request;
    request.set_device("CPU");
    *request.mutable_ast() = ast;
    grpc::ClientContext context;
    return stub_->Compile(&context, request, response);
  }

  std::shared_ptr<FakeCounters> counters_ = std::make_shared<FakeCounters>();
  DeviceRegistry devices_;
  FakeTier* tier_ = nullptr;
  std::unique_ptr<KernelCache> cache_;
  std::unique_ptr<CachingProgramSource> programs_;
  ResourceRegistry resources_{RegistryLimits::ForHostMemory(int64_t{1} << 30)};
  ThreadPool pool_{0};
  std::unique_ptr<KernelServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::KernelService::Stub> stub_;
};

TEST_F(InProcessServiceTest, ExecuteRunsTheKernelAndAWarmKernelIsNeitherCompiledNorLoadedAgain) {
  std::vector<float> out;
  grpc::Status first = ExecuteAdd(&out);
  ASSERT_TRUE(first.ok()) << first.error_message();
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(counters_->compiles.load(), 1);
  EXPECT_EQ(counters_->loads.load(), 1);
  ASSERT_TRUE(ExecuteAdd(&out).ok());
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(counters_->compiles.load(), 1);
  EXPECT_EQ(counters_->loads.load(), 1);
  EXPECT_EQ(counters_->runs.load(), 2);
}

TEST_F(InProcessServiceTest, AKernelIsCompiledOnceAndItsBytesKeptInTheCache) {
  v1::CompileResponse first, second;
  ASSERT_TRUE(Compile(testing::AddKernel(8), &first).ok());
  EXPECT_EQ(first.cache_tier(), "compiled");
  EXPECT_EQ(first.cache_key().size(), 64u);
  EXPECT_EQ(tier_->puts.load(), 1);
  ASSERT_TRUE(Compile(testing::AddKernel(8), &second).ok());
  EXPECT_EQ(second.cache_key(), first.cache_key());
  EXPECT_NE(second.cache_tier(), "compiled");
  EXPECT_EQ(counters_->compiles.load(), 1);
}

TEST_F(InProcessServiceTest, ABackendFailureIsAnErrorNamingTheKernelAndIsNotKept) {
  counters_->fail_compiles = true;
  v1::CompileResponse response;
  grpc::Status failed = Compile(testing::AddKernel(8), &response);
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.error_message().find("E_add"), std::string::npos) << failed.error_message();
  EXPECT_EQ(tier_->size(), 0u);
  counters_->fail_compiles = false;  // the next call compiles again: failures are not cached
  grpc::Status again = Compile(testing::AddKernel(8), &response);
  EXPECT_TRUE(again.ok()) << again.error_message();
  EXPECT_EQ(response.cache_tier(), "compiled");
}

TEST_F(InProcessServiceTest, AnUnreachableCacheTierCostsTheCacheOnly) {
  tier_->unavailable = true;
  v1::CompileResponse response;
  grpc::Status compiled = Compile(testing::AddKernel(8), &response);
  EXPECT_TRUE(compiled.ok()) << compiled.error_message();
  EXPECT_EQ(response.cache_tier(), "compiled");
  std::vector<float> out;
  ASSERT_TRUE(ExecuteAdd(&out).ok());
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44}));
}

TEST_F(InProcessServiceTest, AMalformedAstIsInvalidArgumentNamingTheNode) {
  v1::Graph ast = testing::AddKernel(4);
  ast.mutable_nodes(ast.nodes_size() - 1)->add_src(ast.nodes_size() + 5);  // no such node
  v1::CompileResponse response;
  grpc::Status status = Compile(ast, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("node"), std::string::npos) << status.error_message();
  EXPECT_EQ(counters_->compiles.load(), 0);
}

// A local-socket call that fails for its own reason keeps that reason however late it fails, as
// over gRPC: only a run stopped at its timeout is DEADLINE_EXCEEDED. Before, any error past the
// timeout was (an invalid AST with a 1 µs timeout answered DEADLINE_EXCEEDED).
TEST_F(InProcessServiceTest, ALocalCallFailingPastItsTimeoutKeepsItsOwnError) {
  const Identity who{"local", "local", kRightRun | kRightCompile, /*anonymous=*/false};
  v1::LocalCall call;
  call.set_timeout_us(1);
  v1::ExecuteRequest* execute = call.mutable_execute();
  execute->set_device("CPU");
  v1::KernelInvocation* kernel = execute->add_kernels();
  *kernel->mutable_ast() = testing::AddKernel(4);
  kernel->mutable_ast()->mutable_nodes(0)->add_src(1000);  // no such node
  absl::SleepFor(absl::Milliseconds(1));
  const v1::LocalReply reply = service_->ServeLocal(who, call, [] { return false; });
  EXPECT_EQ(reply.code(), static_cast<int32_t>(absl::StatusCode::kInvalidArgument))
      << reply.message();
}

}  // namespace
}  // namespace uopd
