// Integration tests: a real uopd on a loopback port, driven as clients drive it.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/uopd_client.h"
#include "core/corpus/corpus_file.h"
#include "google/protobuf/util/json_util.h"
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
using testing::RunCommand;
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;
using v1::Node;

TEST(Daemon, UopctlRunPassesTheWholeCorpus) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("corpus"));
  ASSERT_TRUE(daemon.running());
  int code = 0;
  std::string out = RunCommand(
      absl::StrCat(UOPCTL_PATH, " --server ", daemon.address(), " run ", UOPD_CORPUS_DIR, " 2>&1"),
      &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find(" passed, 0 failed"), std::string::npos) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
}

TEST(Daemon, UopctlRunReportsTheFirstDifferingElementAndFails) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("mismatch"));
  ASSERT_TRUE(daemon.running());
  auto entry = LoadCorpusFile(absl::StrCat(UOPD_CORPUS_DIR, "/cases/hw_masked_shift_9.json"));
  UOPD_ASSERT_OK(entry);
  // Element 3 of the expected output is changed by far more than the tolerance.
  std::string expected = entry->kase.outputs(0).expected();
  float wrong = 1000.0f;
  std::memcpy(&expected[12], &wrong, 4);
  entry->kase.mutable_outputs(0)->set_expected(expected);
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(entry->kase, &json).ok());
  std::string path = testing::TempDir("mismatch-case") + "/bad.json";
  std::ofstream(path) << json;
  int code = 0;
  std::string out =
      RunCommand(absl::StrCat(UOPCTL_PATH, " --server ", daemon.address(), " run ", path, " ",
                              UOPD_CORPUS_DIR, "/cases/hw_masked_shift_9.json 2>&1"),
                 &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("FAIL " + path + ": FAILED_PRECONDITION: slot 0: element 3: got "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("expected 1000"), std::string::npos) << out;
  EXPECT_NE(out.find("1 passed, 1 failed"), std::string::npos) << out;
}

// A model's kernels carry tens of MiB: more than one request holds (gRPC's 4 MiB), so uopctl
// streams such buffers ahead of the call and reads large outputs back the same way.
TEST(Daemon, UopctlRunsCasesLargerThanOneMessage) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("large-case"));
  ASSERT_TRUE(daemon.running());
  const int64_t n = (6 << 20) / 4;  // 6 MiB per buffer: two inputs and the output
  v1::CorpusCase kase;
  *kase.mutable_ast() = testing::AddKernel(n);
  std::string a(n * 4, '\0'), b(n * 4, '\0'), sum(n * 4, '\0');
  for (int64_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(i % 1000), y = static_cast<float>(i % 7), z = x + y;
    std::memcpy(&a[i * 4], &x, 4);
    std::memcpy(&b[i * 4], &y, 4);
    std::memcpy(&sum[i * 4], &z, 4);
  }
  for (const auto& [slot, init] : {std::pair{0, std::string()}, std::pair{1, a}, std::pair{2, b}}) {
    v1::CorpusBuffer* buffer = kase.add_buffers();
    buffer->set_slot(slot);
    buffer->set_dtype(DType::FLOAT32);
    buffer->set_size(n);
    buffer->set_init(init);
  }
  v1::CorpusOutput* output = kase.add_outputs();
  output->set_slot(0);
  output->set_expected(sum);
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(kase, &json).ok());
  const std::string path = testing::TempDir("large-case-file") + "/add.json";
  std::ofstream(path) << json;
  int code = 0;
  std::string out = RunCommand(
      absl::StrCat(UOPCTL_PATH, " --server ", daemon.address(), " run ", path, " --verbose 2>&1"),
      &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("PASS " + path), std::string::npos) << out;
}

TEST(Daemon, SecondCompileIsAMemoryHitAndARestartHitsDiskWithoutCompiling) {
  std::string dir = testing::TempDir("restart");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir);
  ASSERT_TRUE(daemon.running());
  {
    Client client(daemon.address());
    auto first = client.Compile(CompileOf(ScaleKernel(64, 3.0)));
    UOPD_ASSERT_OK(first);
    EXPECT_EQ(first->cache_tier(), "compiled");
    auto second = client.Compile(CompileOf(ScaleKernel(64, 3.0)));
    UOPD_ASSERT_OK(second);
    EXPECT_EQ(second->cache_tier(), "memory");
    EXPECT_EQ(second->cache_key(), first->cache_key());
  }
  EXPECT_EQ(daemon.Stop(), 0) << "SIGTERM drains and exits cleanly";
  daemon.Restart();
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto after = client.Compile(CompileOf(ScaleKernel(64, 3.0)));
  UOPD_ASSERT_OK(after);
  EXPECT_EQ(after->cache_tier(), "disk");
  EXPECT_EQ(daemon.Metric("uopd_compilations_total{backend=\"CPU\"}"), 0) << daemon.ScrapeMetrics();
  EXPECT_EQ(daemon.Metric("uopd_cache_requests_total{tier=\"disk\",result=\"hit\"}"), 1);
}

TEST(Daemon, CorruptDiskEntryIsDetectedAndRebuilt) {
  std::string dir = testing::TempDir("corrupt");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir);
  ASSERT_TRUE(daemon.running());
  std::string key;
  {
    Client client(daemon.address());
    auto compiled = client.Compile(CompileOf(ScaleKernel(32, 5.0)));
    UOPD_ASSERT_OK(compiled);
    key = compiled->cache_key();
  }
  daemon.Stop();
  std::string path = absl::StrCat(dir, "/", key.substr(0, 2), "/", key, ".uopd");
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-10, std::ios::end);
    file.put('\x5a');
  }
  daemon.Restart();
  Client client(daemon.address());
  auto rebuilt = client.Compile(CompileOf(ScaleKernel(32, 5.0)));
  UOPD_ASSERT_OK(rebuilt);
  EXPECT_EQ(rebuilt->cache_tier(), "compiled") << "a damaged entry is never served";
  EXPECT_EQ(daemon.Metric("uopd_cache_requests_total{tier=\"disk\",result=\"corrupt\"}"), 1);
  daemon.Restart();
  Client again(daemon.address());
  auto healed = again.Compile(CompileOf(ScaleKernel(32, 5.0)));
  UOPD_ASSERT_OK(healed);
  EXPECT_EQ(healed->cache_tier(), "disk") << "the rebuilt entry replaced the damaged one";
}

TEST(Daemon, SixteenConcurrentClientsCompileANewKernelOnce) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("flight"));
  ASSERT_TRUE(daemon.running());
  // A kernel big enough that its compilation takes a while.
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 256);
  int r = g.Range(g.Index(256), 0);
  int in = g.Buffer(1, DType::FLOAT32, 256);
  int value = g.Load(in, r);
  for (int i = 0; i < 300; ++i) {
    value = g.Node(i % 2 ? Node::MUL : Node::ADD, DType::FLOAT32,
                   {value, g.Float(DType::FLOAT32, 1.0 + i)});
  }
  v1::Graph graph = g.Sink({g.End(g.Store(g.Target(out, r), value), {r})});
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(16);
  std::vector<std::string> keys(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      Client client(daemon.address());
      auto response = client.Compile(CompileOf(graph));
      results[i] = response.status();
      if (response.ok()) keys[i] = response->cache_key();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    UOPD_EXPECT_OK(results[i]);
    EXPECT_EQ(keys[i], keys[0]);
  }
  EXPECT_EQ(daemon.Metric("uopd_compilations_total{backend=\"CPU\"}"), 1);
}

TEST(Daemon, BuffersOver64MiBRoundTripThroughStreams) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("stream"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  const int64_t size = (80 << 20) / 4;  // 80 MiB of uint32
  auto handle = client.CreateBuffer("CPU", DType::UINT32, size);
  UOPD_ASSERT_OK(handle);
  std::string bytes(size * 4, '\0');
  std::mt19937 rng(7);
  for (size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t v = rng();
    std::memcpy(&bytes[i], &v, 4);
  }
  UOPD_ASSERT_OK(client.WriteBuffer(*handle, bytes));
  auto back = client.ReadBuffer(*handle);
  UOPD_ASSERT_OK(back);
  EXPECT_TRUE(*back == bytes) << "80 MiB did not round-trip";
  auto tail = client.ReadBuffer(*handle, bytes.size() - 100, 100);
  UOPD_ASSERT_OK(tail);
  EXPECT_EQ(*tail, bytes.substr(bytes.size() - 100));
  UOPD_EXPECT_OK(client.FreeBuffer(*handle));
}

TEST(Daemon, SmallBufferCopiesGoInOneUnaryCallWithTheStreamsChecks) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("small-copies"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto handle = client.CreateBuffer("CPU", DType::UINT8, 64);
  UOPD_ASSERT_OK(handle);
  UOPD_ASSERT_OK(client.WriteBufferSmall(*handle, "hello", 10));
  auto back = client.ReadBufferSmall(*handle, 10, 5);
  UOPD_ASSERT_OK(back);
  EXPECT_EQ(*back, "hello");
  auto all = client.ReadBufferSmall(*handle);
  UOPD_ASSERT_OK(all);
  EXPECT_EQ(all->size(), 64u);
  auto streamed = client.ReadBuffer(*handle);
  UOPD_ASSERT_OK(streamed);
  EXPECT_EQ(*streamed, *all);
  EXPECT_TRUE(StatusIs(client.WriteBufferSmall(*handle, "x", 64), absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(StatusIs(client.ReadBufferSmall(*handle, 60, 5), absl::StatusCode::kOutOfRange));
  // The error names the range asked for.
  EXPECT_TRUE(StatusIs(client.ReadBufferSmall(*handle, -1, 4), absl::StatusCode::kOutOfRange,
                       {"4 bytes at offset -1"}));
  EXPECT_TRUE(StatusIs(client.WriteBufferSmall("buf-nope", "x"), absl::StatusCode::kNotFound,
                       {"buf-nope"}));
  EXPECT_TRUE(
      StatusIs(client.WriteBufferSmall("", "x"), absl::StatusCode::kInvalidArgument, {"handle"}));
  // Past one message's worth, the unary calls send the client to the streams.
  auto big = client.CreateBuffer("CPU", DType::UINT8, 5 << 20);
  UOPD_ASSERT_OK(big);
  EXPECT_TRUE(StatusIs(client.ReadBufferSmall(*big), absl::StatusCode::kResourceExhausted,
                       {"ReadBuffer stream"}));
  EXPECT_TRUE(StatusIs(client.WriteBufferSmall(*big, std::string(4 << 20, 'x')),
                       absl::StatusCode::kResourceExhausted));
  UOPD_ASSERT_OK(client.WriteBufferSmall(*big, std::string(3 << 20, 'y'), 1 << 20));
  auto tail = client.ReadBufferSmall(*big, (4 << 20) - 2, 2);
  UOPD_ASSERT_OK(tail);
  EXPECT_EQ(*tail, "yy");
}

TEST(Daemon, ServesAUnixSocketOnlyItsOwnerCanOpenUnlessToldOtherwise) {
  const std::string dir = testing::TempDir("unix-socket");
  for (const auto& [mode_flag, expected] :
       {std::pair<std::string, int>{"", 0600}, std::pair<std::string, int>{"0660", 0660}}) {
    const std::string socket = dir + "/uopd-" + std::to_string(expected) + ".sock";
    std::vector<std::string> flags = {"--listen=unix:" + socket};
    if (!mode_flag.empty()) flags.push_back("--unix_socket_mode=" + mode_flag);
    DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/cache", flags);
    ASSERT_TRUE(daemon.running());
    struct stat info;
    ASSERT_EQ(stat(socket.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, expected);
    Client client("unix:" + socket);
    auto handle = client.CreateBuffer("CPU", DType::UINT8, 16);
    UOPD_ASSERT_OK(handle);
    UOPD_ASSERT_OK(client.WriteBufferSmall(*handle, "0123456789abcdef"));
    auto back = client.ReadBufferSmall(*handle);
    UOPD_ASSERT_OK(back);
    EXPECT_EQ(*back, "0123456789abcdef");
  }
  DaemonProcess bad(UOPD_DAEMON_PATH, dir + "/cache",
                    {"--listen=unix:" + dir + "/bad.sock", "--unix_socket_mode=999"});
  EXPECT_FALSE(bad.running());
}

TEST(Daemon, RunsPlansWithBufferHandlesAndRebindsVariables) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("plan"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  // out[i] = i for i < n.
  GraphBuilder g;
  int out = g.Buffer(0, DType::INT32, 8);
  int n = g.Var("n", 1, 8);
  int r = g.Range(n, 0);
  v1::Graph graph =
      g.Sink({g.End(g.Store(g.Target(out, r), g.Node(Node::CAST, DType::INT32, {r})), {r})});
  auto handle = client.CreateBuffer("CPU", DType::INT32, 8, std::string(32, '\xff'));
  UOPD_ASSERT_OK(handle);
  v1::PrepareRequest prepare;
  prepare.add_buffers()->set_handle(*handle);
  v1::KernelInvocation* kernel = prepare.add_kernels();
  *kernel->mutable_ast() = graph;
  kernel->add_buffers(0);
  auto prepared = client.Prepare(prepare);
  UOPD_ASSERT_OK(prepared);
  ASSERT_EQ(prepared->vars_size(), 1);
  EXPECT_EQ(prepared->vars(0).name(), "n");
  v1::RunPlanRequest run;
  run.set_plan_id(prepared->plan_id());
  (*run.mutable_vars())["n"] = 3;
  UOPD_ASSERT_OK(client.RunPlan(run));
  auto bytes = client.ReadBuffer(*handle);
  UOPD_ASSERT_OK(bytes);
  const int32_t* values = reinterpret_cast<const int32_t*>(bytes->data());
  EXPECT_EQ(values[2], 2);
  EXPECT_EQ(values[3], -1);
  (*run.mutable_vars())["n"] = 9;
  EXPECT_TRUE(StatusIs(client.RunPlan(run), absl::StatusCode::kInvalidArgument,
                       {"'n' = 9 is outside [1, 8]"}));
  UOPD_EXPECT_OK(client.ReleasePlan(prepared->plan_id()));
  EXPECT_TRUE(StatusIs(client.RunPlan(run), absl::StatusCode::kNotFound, {"plan"}));
}

TEST(Daemon, ConcurrentRunsOfOnePlanEachReturnTheirOwnOutputs) {
  // Runs of a plan are serialized; what a RunPlan returns must be its own run's outputs, read
  // before the next run may write them (they were read after the plan was released, so a run
  // of another thread could land in between and the reply carried its values).
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("plan-concurrent"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  constexpr int kN = 1 << 18;  // 1 MiB of int32: the copy out takes a while
  GraphBuilder g;
  int out = g.Buffer(0, DType::INT32, kN);
  int r = g.Range(g.Index(kN), 0);
  int v = g.Node(Node::CAST, DType::INT32, {g.Var("v", 1, 1000)});
  v1::Graph graph = g.Sink({g.End(g.Store(g.Target(out, r), v), {r})});
  auto handle = client.CreateBuffer("CPU", DType::INT32, kN);
  UOPD_ASSERT_OK(handle);
  v1::PrepareRequest prepare;
  prepare.add_buffers()->set_handle(*handle);
  v1::KernelInvocation* kernel = prepare.add_kernels();
  *kernel->mutable_ast() = graph;
  kernel->add_buffers(0);
  auto prepared = client.Prepare(prepare);
  UOPD_ASSERT_OK(prepared);
  std::atomic<int> wrong{0};
  auto runs = [&](int value) {
    v1::RunPlanRequest run;
    run.set_plan_id(prepared->plan_id());
    (*run.mutable_vars())["v"] = value;
    run.add_return_buffers(0);
    for (int i = 0; i < 40; ++i) {
      auto ran = client.RunPlan(run);
      if (!ran.ok() || ran->outputs_size() != 1) {
        ++wrong;
        continue;
      }
      const std::string& bytes = ran->outputs(0).data();
      std::vector<int32_t> got(bytes.size() / 4);
      std::memcpy(got.data(), bytes.data(), got.size() * 4);
      if (std::any_of(got.begin(), got.end(), [&](int32_t x) { return x != value; })) ++wrong;
    }
  };
  std::thread a(runs, 1), b(runs, 2);
  a.join();
  b.join();
  EXPECT_EQ(wrong.load(), 0) << "replies that carried another run's outputs";
}

TEST(Daemon, AnswersEachErrorClassWithItsCode) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("errors"),
                       {"--max_buffer_bytes=1048576"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());

  // INVALID_ARGUMENT: a bad graph, naming the kernel and the node.
  v1::ExecuteRequest bad;
  v1::Graph broken = ScaleKernel(4, 2.0);
  broken.mutable_nodes(4)->clear_src();  // the MUL loses its operands
  *bad.add_kernels()->mutable_ast() = broken;
  EXPECT_TRUE(
      StatusIs(client.Execute(bad), absl::StatusCode::kInvalidArgument, {"kernels[0]", "node 4"}));

  // NOT_FOUND: unknown handles.
  EXPECT_TRUE(StatusIs(client.ReadBuffer("buf-nope"), absl::StatusCode::kNotFound, {"buf-nope"}));
  EXPECT_TRUE(StatusIs(client.FreeBuffer("buf-nope"), absl::StatusCode::kNotFound));

  // RESOURCE_EXHAUSTED: over the buffer limit.
  EXPECT_TRUE(StatusIs(client.CreateBuffer("CPU", DType::FLOAT32, 1 << 20),
                       absl::StatusCode::kResourceExhausted, {"exceeds the limit"}));

  // FAILED_PRECONDITION: a device this server does not have.
  v1::CompileRequest on_gpu = CompileOf(ScaleKernel(4, 2.0));
  on_gpu.set_device("CUDA:3");
  EXPECT_TRUE(StatusIs(client.Compile(on_gpu), absl::StatusCode::kFailedPrecondition, {"CUDA:3"}));

  // UNIMPLEMENTED: an op that exists only after lowering.
  GraphBuilder special;
  int s = special.Node(Node::SPECIAL, DType::INDEX);
  special.Mut(s)->mutable_arg()->set_str("gidx0");
  EXPECT_TRUE(StatusIs(client.Compile(CompileOf(special.Sink({s}))),
                       absl::StatusCode::kUnimplemented, {"SPECIAL"}));

  // OUT_OF_RANGE: a run-time bounds check stops the kernel.
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 4);
  int r = g.Range(g.Index(4), 0);
  int in = g.Buffer(1, DType::FLOAT32, 4);
  int idx = g.Node(Node::ADD, DType::INDEX, {r, g.Var("shift", 0, 4)});
  v1::ExecuteRequest oob;
  *oob.add_kernels()->mutable_ast() =
      g.Sink({g.End(g.Store(g.Target(out, r), g.Load(in, idx)), {r})});
  for (int i = 0; i < 2; ++i) {
    v1::InlineBuffer* buffer = oob.add_buffers()->mutable_inline_();
    buffer->set_dtype(DType::FLOAT32);
    buffer->set_size(4);
    oob.mutable_kernels(0)->add_buffers(i);
  }
  (*oob.mutable_vars())["shift"] = 2;
  EXPECT_TRUE(StatusIs(client.Execute(oob), absl::StatusCode::kOutOfRange, {"buffer slot 1"}));
  (*oob.mutable_vars())["shift"] = 0;
  UOPD_EXPECT_OK(client.Execute(oob));

  // The daemon is still serving after all of that.
  UOPD_EXPECT_OK(client.ListDevices());
}

TEST(Daemon, BuffersBelongToTheClientThatCreatedThem) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("owner"));
  ASSERT_TRUE(daemon.running());
  Client alice(daemon.address());
  Client mallory(daemon.address());
  auto handle = alice.CreateBuffer("CPU", DType::UINT8, 4, "abcd");
  UOPD_ASSERT_OK(handle);
  EXPECT_TRUE(StatusIs(mallory.ReadBuffer(*handle), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(mallory.FreeBuffer(*handle), absl::StatusCode::kNotFound));
  v1::ExecuteRequest steal;
  steal.add_buffers()->set_handle(*handle);
  EXPECT_TRUE(StatusIs(mallory.Execute(steal), absl::StatusCode::kNotFound));
  auto mine = alice.ReadBuffer(*handle);
  UOPD_ASSERT_OK(mine);
  EXPECT_EQ(*mine, "abcd");
}

v1::Opt WireOpt(const std::string& op, int axis, int arg) {
  v1::Opt opt;
  opt.set_op(op);
  opt.set_axis(axis);
  opt.set_arg(arg);
  return opt;
}

std::string AppliedOpts(const v1::CompileResponse& response) {
  std::string out;
  for (const v1::Opt& o : response.applied_opts()) {
    absl::StrAppend(&out, o.op(), "(", o.axis(), ",", o.arg(), ") ");
  }
  return out;
}

TEST(Daemon, OptimizesAsEachRequestAsksAndSaysWhatItApplied) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("optimize"), {"--search_budget=3s"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  const v1::Graph matmul = testing::Matmul(32, 16, 64);

  auto heuristic = client.Compile(CompileOf(matmul));  // the server's default
  UOPD_ASSERT_OK(heuristic);
  EXPECT_FALSE(heuristic->applied_opts().empty());

  v1::CompileRequest none = CompileOf(matmul);
  none.mutable_optimization()->set_mode(v1::Optimization::NONE);
  auto as_written = client.Compile(none);
  UOPD_ASSERT_OK(as_written);
  EXPECT_TRUE(as_written->applied_opts().empty());
  EXPECT_NE(as_written->cache_key(), heuristic->cache_key());

  v1::CompileRequest explicit_opts = CompileOf(matmul);
  explicit_opts.mutable_optimization()->set_mode(v1::Optimization::OPTS);
  *explicit_opts.mutable_optimization()->add_opts() = WireOpt("UPCAST", 1, 16);
  *explicit_opts.mutable_optimization()->add_opts() = WireOpt("UNROLL", 0, 4);
  auto chosen = client.Compile(explicit_opts);
  UOPD_ASSERT_OK(chosen);
  EXPECT_EQ(AppliedOpts(*chosen), "UPCAST(1,16) UNROLL(0,4) ");
  EXPECT_NE(chosen->cache_key(), heuristic->cache_key());
  EXPECT_NE(chosen->cache_key(), as_written->cache_key());

  // The same list as tinygrad's KernelInfo.opts_to_apply on the SINK: the same kernel.
  v1::CompileRequest in_ast = CompileOf(matmul);
  v1::Node* sink = in_ast.mutable_ast()->mutable_nodes(in_ast.ast().nodes_size() - 1);
  *sink->mutable_arg()->mutable_kernel()->mutable_opts_to_apply()->mutable_opts() =
      explicit_opts.optimization().opts();
  auto from_ast = client.Compile(in_ast);
  UOPD_ASSERT_OK(from_ast);
  EXPECT_EQ(from_ast->cache_key(), chosen->cache_key());

  // Bad lists name the opt.
  v1::CompileRequest unknown = explicit_opts;
  unknown.mutable_optimization()->mutable_opts(1)->set_op("UNROLLL");
  EXPECT_TRUE(StatusIs(client.Compile(unknown), absl::StatusCode::kInvalidArgument,
                       {"optimization.opts[1]", "UNROLLL"}));
  v1::CompileRequest inapplicable = explicit_opts;
  *inapplicable.mutable_optimization()->mutable_opts(1) = WireOpt("UPCAST", 7, 4);
  EXPECT_TRUE(StatusIs(client.Compile(inapplicable), absl::StatusCode::kInvalidArgument,
                       {"opts_to_apply[1]", "UPCAST(7, 4)"}));
  v1::CompileRequest opts_without_mode = CompileOf(matmul);
  *opts_without_mode.mutable_optimization()->add_opts() = WireOpt("UPCAST", 1, 4);
  EXPECT_TRUE(StatusIs(client.Compile(opts_without_mode), absl::StatusCode::kInvalidArgument,
                       {"mode OPTS"}));

  // A search: timed on the CPU within the budget, then recorded: the next request finds it.
  v1::CompileRequest search = CompileOf(matmul);
  search.mutable_optimization()->set_mode(v1::Optimization::SEARCH);
  auto searched = client.Compile(search, absl::Seconds(60));
  UOPD_ASSERT_OK(searched);
  EXPECT_FALSE(searched->applied_opts().empty());
  auto start = absl::Now();
  auto again = client.Compile(search, absl::Seconds(60));
  UOPD_ASSERT_OK(again);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(again->cache_key(), searched->cache_key());
  EXPECT_EQ(AppliedOpts(*again), AppliedOpts(*searched));

  // Every mode computes the same matmul: run it with an explicit list and compare.
  std::vector<float> a(32 * 16), b(16 * 64);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) - 2;
  v1::ExecuteRequest run;
  auto add_buffer = [&](const std::vector<float>& data, int64_t size) {
    v1::InlineBuffer* buffer = run.add_buffers()->mutable_inline_();
    buffer->set_dtype(DType::FLOAT32);
    buffer->set_size(size);
    if (!data.empty()) buffer->set_data(data.data(), data.size() * sizeof(float));
  };
  add_buffer({}, 32 * 64);
  add_buffer(a, a.size());
  add_buffer(b, b.size());
  v1::KernelInvocation* kernel = run.add_kernels();
  *kernel->mutable_ast() = matmul;
  for (int slot = 0; slot < 3; ++slot) kernel->add_buffers(slot);
  *kernel->mutable_optimization() = explicit_opts.optimization();
  run.add_return_buffers(0);
  auto ran = client.Execute(run);
  UOPD_ASSERT_OK(ran);
  ASSERT_EQ(ran->outputs_size(), 1);
  std::vector<float> out(32 * 64);
  ASSERT_EQ(ran->outputs(0).data().size(), out.size() * sizeof(float));
  std::memcpy(out.data(), ran->outputs(0).data().data(), ran->outputs(0).data().size());
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 64; ++j) {
      float want = 0;
      for (int r = 0; r < 16; ++r) want += a[i * 16 + r] * b[r * 64 + j];
      ASSERT_EQ(out[i * 64 + j], want) << i << ", " << j;
    }
  }
}

TEST(Daemon, FusesMultiplyAddsOnlyForRequestsThatAllowIt) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("fma"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  // out = a*b + c with (1 + 2^-13)^2 - (1 + 2^-12): 2^-26 with one rounding, 0 with two.
  constexpr int kN = 40;
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, kN);
  int i = g.Range(g.Index(kN), 0);
  auto load = [&](int slot) { return g.Load(g.Buffer(slot, DType::FLOAT32, kN), i); };
  int sum = g.Node(v1::Node::ADD, DType::FLOAT32,
                   {g.Node(v1::Node::MUL, DType::FLOAT32, {load(1), load(2)}), load(3)});
  const v1::Graph probe = g.Sink({g.End(g.Store(g.Target(out, i), sum), {i})}, "fma_probe");

  v1::CompileRequest strict = CompileOf(probe);
  strict.set_want_source(true);
  v1::CompileRequest fused = strict;
  fused.mutable_optimization()->set_allow_fma(true);
  auto strict_kernel = client.Compile(strict);
  auto fused_kernel = client.Compile(fused);
  UOPD_ASSERT_OK(strict_kernel);
  UOPD_ASSERT_OK(fused_kernel);
  EXPECT_NE(fused_kernel->cache_key(), strict_kernel->cache_key());
  EXPECT_EQ(strict_kernel->source().find("llvm.fmuladd"), std::string::npos);
  EXPECT_NE(fused_kernel->source().find("llvm.fmuladd"), std::string::npos);

  auto run = [&](bool allow_fma) -> std::vector<float> {
    v1::ExecuteRequest request;
    const float a = 1.0f + std::ldexp(1.0f, -13), c = -(1.0f + std::ldexp(1.0f, -12));
    for (float fill : {0.0f, a, a, c}) {
      std::vector<float> data(kN, fill);
      v1::InlineBuffer* buffer = request.add_buffers()->mutable_inline_();
      buffer->set_dtype(DType::FLOAT32);
      buffer->set_size(kN);
      buffer->set_data(data.data(), data.size() * sizeof(float));
    }
    v1::KernelInvocation* kernel = request.add_kernels();
    *kernel->mutable_ast() = probe;
    for (int slot = 0; slot < 4; ++slot) kernel->add_buffers(slot);
    kernel->mutable_optimization()->set_allow_fma(allow_fma);
    request.add_return_buffers(0);
    auto ran = client.Execute(request);
    EXPECT_TRUE(ran.ok()) << ran.status();
    if (!ran.ok() || ran->outputs_size() != 1) return {};
    std::vector<float> values(kN);
    std::memcpy(values.data(), ran->outputs(0).data().data(),
                std::min(ran->outputs(0).data().size(), values.size() * sizeof(float)));
    return values;
  };
  EXPECT_EQ(run(false), std::vector<float>(kN, 0.0f));
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "this CPU has no FMA";
#endif
  EXPECT_EQ(run(true), std::vector<float>(kN, std::ldexp(1.0f, -26)));
}

TEST(Daemon, ServesCpuWithoutLibcudaAndCompilesForGpuTargets) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("gpu-target"));
  ASSERT_TRUE(daemon.running()) << "the daemon must start whether or not a GPU driver exists";
  Client client(daemon.address());
  auto devices = client.ListDevices();
  UOPD_ASSERT_OK(devices);
  ASSERT_GE(devices->devices_size(), 1);
  EXPECT_EQ(devices->devices(0).name(), "CPU");
  EXPECT_GT(devices->devices(0).memory_bytes(), 0) << "the CPU reports the host's RAM";
  EXPECT_GE(devices->devices(0).threads(), 1);
  // The hardware, for people: the architecture and the CPU the compiler targets.
  const std::string& description = devices->devices(0).description();
  EXPECT_TRUE(absl::StartsWith(description, "x86_64 ") || absl::StartsWith(description, "aarch64 "))
      << description;
#ifdef UOPD_WITH_CUDA
  v1::CompileRequest request = CompileOf(ScaleKernel(1000, 2.0));
  request.set_device("CUDA");
  request.set_target("sm_90");
  request.set_want_binary(true);
  // As written: a thread per element (the heuristics would upcast and take fewer blocks).
  request.mutable_optimization()->set_mode(v1::Optimization::NONE);
  auto compiled = client.Compile(request);
  UOPD_ASSERT_OK(compiled);
  EXPECT_EQ(compiled->target(), "sm_90");
  EXPECT_NE(compiled->ptx().find(".entry scale("), std::string::npos) << compiled->ptx();
  EXPECT_EQ(compiled->binary().substr(0, 4),
            "\x7f"
            "ELF");
  ASSERT_EQ(compiled->metadata().global_size_size(), 3);
  EXPECT_EQ(compiled->metadata().global_size(0).constant(), 4) << "1000 threads in blocks of 256";
  request.set_target("sm_80");
  auto other = client.Compile(request);
  UOPD_ASSERT_OK(other);
  EXPECT_NE(other->cache_key(), compiled->cache_key()) << "the target is part of the cache key";
  // By default the GPU heuristics choose (tinygrad's hand-coded opts): fewer, fuller threads.
  request.clear_optimization();
  auto chosen = client.Compile(request);
  UOPD_ASSERT_OK(chosen);
  EXPECT_GT(chosen->applied_opts_size(), 0);
  EXPECT_NE(chosen->cache_key(), other->cache_key());
  request.set_target("sm_1");
  EXPECT_TRUE(StatusIs(client.Compile(request), absl::StatusCode::kInvalidArgument, {"sm_1"}));
#endif
}

#ifdef UOPD_WITH_CUDA
TEST(Daemon, HalfMatmulsForAGpuTakeTensorCoresUnlessTurnedOff) {
  v1::CompileRequest request =
      CompileOf(testing::Matmul(64, 64, 64, v1::DType::FLOAT16, v1::DType::FLOAT32));
  request.set_device("CUDA");
  request.set_target("sm_80");
  request.set_want_binary(true);  // and the PTX
  {
    DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("tensor-cores"));
    ASSERT_TRUE(daemon.running());
    Client client(daemon.address());
    auto chosen = client.Compile(request);  // the GPU heuristics, as tinygrad's: TC first
    UOPD_ASSERT_OK(chosen);
    ASSERT_GT(chosen->applied_opts_size(), 0);
    EXPECT_EQ(chosen->applied_opts(0).op(), "TC");
    EXPECT_NE(chosen->ptx().find("mma.sync.aligned.m16n8k16"), std::string::npos);
  }
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("no-tensor-cores"),
                       {"--tensor_cores=false"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto chosen = client.Compile(request);
  UOPD_ASSERT_OK(chosen);
  for (const v1::Opt& opt : chosen->applied_opts()) EXPECT_NE(opt.op(), "TC");
  EXPECT_EQ(chosen->ptx().find("mma.sync"), std::string::npos);
  request.mutable_optimization()->set_mode(v1::Optimization::OPTS);
  v1::Opt* tc = request.mutable_optimization()->add_opts();
  tc->set_op("TC");
  tc->set_axis(0);
  for (int v : {-1, 0, 1}) tc->add_tc(v);
  EXPECT_TRUE(StatusIs(client.Compile(request), absl::StatusCode::kInvalidArgument,
                       {"no tensor core available"}));
}
#endif

TEST(Daemon, CompilesSourceThatClientsRenderedThemselves) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("source"),
                       {"--allow_client_source", "--anonymous_rights=compile,run,client_source"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::CompileRequest from_ast = CompileOf(ScaleKernel(16, 7.0));
  from_ast.set_want_source(true);
  auto rendered = client.Compile(from_ast);
  UOPD_ASSERT_OK(rendered);
  v1::CompileRequest request;
  request.mutable_source()->set_src(rendered->source());
  request.mutable_source()->set_entry(rendered->entry());
  *request.mutable_source()->mutable_metadata() = rendered->metadata();
  request.set_want_binary(true);
  auto compiled = client.Compile(request);
  UOPD_ASSERT_OK(compiled);
  EXPECT_EQ(compiled->cache_tier(), "compiled");
  EXPECT_EQ(compiled->binary().substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_NE(compiled->cache_key(), rendered->cache_key()) << "keyed on the source, not an AST";
  auto again = client.Compile(request);
  UOPD_ASSERT_OK(again);
  EXPECT_EQ(again->cache_tier(), "memory");
  // The client's mistake, not the server's: INVALID_ARGUMENT.
  request.mutable_source()->set_src("this is not LLVM IR");
  EXPECT_TRUE(
      StatusIs(client.Compile(request), absl::StatusCode::kInvalidArgument, {"does not parse"}));
}

TEST(Daemon, SharesCacheEntriesAndRefusesPutsUnlessAllowed) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("cache-service"),
                       {"--anonymous_rights=compile,run,cache_read,cache_write"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto compiled = client.Compile(CompileOf(ScaleKernel(8, 9.0)));
  UOPD_ASSERT_OK(compiled);
  auto channel = grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials());
  auto cache = v1::CacheService::NewStub(channel);
  {
    grpc::ClientContext context;
    v1::FindMissingRequest request;
    // Each key is answered once, however often it is named (a key repeated 10,000 times had its
    // entry copied each time: seconds of CPU for a 650 KB request).
    for (int i = 0; i < 3; ++i) {
      request.add_keys(compiled->cache_key());
      request.add_keys(std::string(64, 'a'));
    }
    v1::FindMissingResponse response;
    ASSERT_TRUE(cache->FindMissing(&context, request, &response).ok());
    ASSERT_EQ(response.missing_size(), 1);
    EXPECT_EQ(response.missing(0), std::string(64, 'a'));
  }
  v1::CacheGetResponse entry;
  {
    grpc::ClientContext context;
    v1::CacheGetRequest request;
    request.set_key(compiled->cache_key());
    ASSERT_TRUE(cache->Get(&context, request, &entry).ok());
    EXPECT_TRUE(entry.found());
  }
  {
    grpc::ClientContext context;
    v1::CachePutRequest request;
    request.set_key(std::string(64, 'b'));
    request.set_value(entry.value());
    v1::CachePutResponse response;
    grpc::Status status = cache->Put(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  }
  {
    grpc::ClientContext context;
    v1::CacheGetRequest request;
    request.set_key("not-a-key");
    v1::CacheGetResponse response;
    EXPECT_EQ(cache->Get(&context, request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
}

}  // namespace
}  // namespace uopd
