// Security probes against a real daemon: each is something an attacker with only network access
// to the gRPC port tried, repeated as a test that must get a clean status while the daemon
// serves on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/uopd_client.h"
#include "core/cache/disk_tier.h"
#include "core/cache/entry_signature.h"
#include "core/util/sha256.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/daemon_requests.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::CompileOf;
using testing::DaemonProcess;
using testing::HeavyKernel;
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
// Client source needs the daemon's permission and the caller's right.
constexpr char kClientSourceRights[] = "--anonymous_rights=compile,run,client_source";

// A Compile request carrying `src` as client-rendered source, with the metadata of the kernel
// uopd rendered for `graph` (entry "scale").
v1::CompileRequest ClientSource(Client& client, const v1::Graph& graph, const std::string& src) {
  v1::CompileRequest from_ast = CompileOf(graph);
  from_ast.set_want_source(true);
  auto rendered = client.Compile(from_ast);
  EXPECT_TRUE(rendered.ok()) << rendered.status();
  v1::CompileRequest request;
  request.mutable_source()->set_src(src.empty() && rendered.ok() ? rendered->source() : src);
  request.mutable_source()->set_entry("scale");
  if (rendered.ok()) *request.mutable_source()->mutable_metadata() = rendered->metadata();
  request.set_want_binary(true);
  return request;
}

// out[i] = in[i] * factor over 4 float32, both buffers inline (in = 1, 2, 3, 4), returning out.
v1::ExecuteRequest ScaleRequest(double factor) {
  v1::ExecuteRequest request;
  for (int i = 0; i < 2; ++i) {
    v1::InlineBuffer* buffer = request.add_buffers()->mutable_inline_();
    buffer->set_dtype(DType::FLOAT32);
    buffer->set_size(4);
  }
  const float in[4] = {1, 2, 3, 4};
  request.mutable_buffers(1)->mutable_inline_()->set_data(
      std::string(reinterpret_cast<const char*>(in), sizeof(in)));
  *request.add_kernels()->mutable_ast() = ScaleKernel(4, factor);
  request.mutable_kernels(0)->add_buffers(0);
  request.mutable_kernels(0)->add_buffers(1);
  request.add_return_buffers(0);
  return request;
}

TEST(Security, OffsetsNearTheInt64LimitAreOutOfRange) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("offsets"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto handle = client.CreateBuffer("CPU", DType::UINT8, 16);
  UOPD_ASSERT_OK(handle);

  // offset + size wraps negative: this passed the bounds check and the daemon died (SIGSEGV).
  EXPECT_TRUE(StatusIs(client.WriteBuffer(*handle, "xy", kMaxInt64), absl::StatusCode::kOutOfRange,
                       {"offset 9223372036854775807"}));
  EXPECT_TRUE(StatusIs(client.WriteBuffer(*handle, "xy", 15), absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(StatusIs(client.ReadBuffer(*handle, kMaxInt64, 2), absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(StatusIs(client.ReadBuffer(*handle, kMaxInt64 - 1, kMaxInt64),
                       absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(StatusIs(client.ReadBuffer(*handle, 17), absl::StatusCode::kOutOfRange));

  // A view whose element count times its item size wraps to a small number of bytes.
  v1::ExecuteRequest request;
  request.add_buffers()->set_handle(*handle);
  v1::ViewRef* view = request.add_buffers()->mutable_view();
  view->set_base(0);
  view->set_dtype(DType::FLOAT64);
  view->set_size(int64_t{1} << 61);  // 2^61 * 8 bytes = 2^64: 0 when wrapped
  EXPECT_TRUE(StatusIs(client.Execute(request), absl::StatusCode::kOutOfRange,
                       {"buffers[1]", "does not fit"}));

  UOPD_EXPECT_OK(client.WriteBuffer(*handle, "xy", 14));
  auto tail = client.ReadBuffer(*handle, 14);
  UOPD_ASSERT_OK(tail);
  EXPECT_EQ(*tail, "xy");
}

// A reply names each buffer once. 4 MB of return_buffers naming one empty buffer made a reply of
// 4 million entries (the daemon's peak memory 109 MB -> 530 MB for one call, 2.7 GB for six,
// charged to no quota; a review helper's finding).
TEST(Security, AReplyReturnsEachBufferOnce) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("return-once"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::ExecuteRequest request = ScaleRequest(2.0);
  request.add_return_buffers(1);
  UOPD_EXPECT_OK(client.Execute(request));
  request.add_return_buffers(0);
  EXPECT_TRUE(StatusIs(client.Execute(request), absl::StatusCode::kInvalidArgument,
                       {"return_buffers names buffer 0 twice"}));
}

TEST(Security, ClientSourceIsRefusedUnlessTheDaemonAllowsIt) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("no-source"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  // The probe that read a host file: module asm including it into the object.
  v1::CompileRequest request =
      ClientSource(client, ScaleKernel(4, 3.0), "module asm \".incbin \\\"/etc/passwd\\\"\"\n");
  EXPECT_TRUE(StatusIs(client.Compile(request), absl::StatusCode::kPermissionDenied,
                       {"--allow_client_source"}));
  UOPD_EXPECT_OK(client.ListDevices());

  // Allowed by the daemon, but not a right of this caller.
  DaemonProcess allowing(UOPD_DAEMON_PATH, testing::TempDir("no-source-right"),
                         {"--allow_client_source"});
  ASSERT_TRUE(allowing.running());
  Client caller(allowing.address());
  EXPECT_TRUE(StatusIs(caller.Compile(request), absl::StatusCode::kPermissionDenied,
                       {"anonymous callers", "client_source"}));
}

TEST(Security, InvalidAssemblyInClientSourceFailsTheCallNotTheDaemon) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("bad-asm"),
                       {"--allow_client_source", kClientSourceRights});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::CompileRequest valid = ClientSource(client, ScaleKernel(4, 5.0), "");
  // LLVM called exit(1) on this and the daemon was gone.
  v1::CompileRequest request = valid;
  request.mutable_source()->set_src(
      absl::StrCat("module asm \"this is not an instruction\"\n", valid.source().src()));
  EXPECT_TRUE(StatusIs(client.Compile(request), absl::StatusCode::kInvalidArgument,
                       {"this is not an instruction"}));
  UOPD_EXPECT_OK(client.Compile(valid));
}

TEST(Security, CompilersCannotReadHostFilesEvenWithClientSourceAllowed) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("incbin"),
                       {"--allow_client_source", kClientSourceRights});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::CompileRequest valid = ClientSource(client, ScaleKernel(4, 6.0), "");
  v1::CompileRequest request = valid;
  request.mutable_source()->set_src(
      absl::StrCat("module asm \".incbin \\\"/etc/passwd\\\"\"\n", valid.source().src()));
  auto compiled = client.Compile(request);
  // The compile worker's sandbox cannot open the file: the assembler fails, nothing is read.
  EXPECT_TRUE(StatusIs(compiled, absl::StatusCode::kInvalidArgument, {"incbin"}));
  UOPD_EXPECT_OK(client.Compile(valid));
}

TEST(Security, ACompilerCrashCostsOneCallAndTheDaemonServesOn) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("crash"),
                       {"--allow_client_source", kClientSourceRights, "--compile_workers=1"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::CompileRequest valid = ClientSource(client, ScaleKernel(4, 8.0), "");
  // An intrinsic x86 cannot select: LLVM reports a fatal error and aborts its process.
  v1::CompileRequest request = valid;
  request.mutable_source()->set_src(
      "declare i64 @llvm.aarch64.get.fpcr()\n"
      "define i32 @scale(ptr %b, ptr %v) {\n"
      "  %x = call i64 @llvm.aarch64.get.fpcr()\n"
      "  %t = trunc i64 %x to i32\n"
      "  ret i32 %t\n"
      "}\n");
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        StatusIs(client.Compile(request), absl::StatusCode::kInvalidArgument, {"Cannot select"}));
  }
  // A fresh worker took the place of each that died.
  UOPD_EXPECT_OK(client.Compile(valid));
  UOPD_EXPECT_OK(client.Compile(CompileOf(ScaleKernel(4, 8.5))));
  EXPECT_GE(daemon.Metric("uopd_compile_worker_events_total{event=\"crashed\"}"), 3);
}

TEST(Security, AnObjectTooLargeOrACompileOutOfMemoryFailsTheCall) {
  DaemonProcess daemon(
      UOPD_DAEMON_PATH, testing::TempDir("zero"),
      {"--allow_client_source", kClientSourceRights, "--compile_memory_bytes=1073741824"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::CompileRequest valid = ClientSource(client, ScaleKernel(4, 9.0), "");
  v1::CompileRequest request = valid;
  // 100 MB of zeros from a one-line request: over the 64 MiB object limit.
  request.mutable_source()->set_src(
      absl::StrCat("module asm \".zero 100000000\"\n", valid.source().src()));
  EXPECT_TRUE(
      StatusIs(client.Compile(request), absl::StatusCode::kResourceExhausted, {"over the limit"}));
  // 3 GB: past the worker's 1 GiB of memory (this aborted the daemon at 2.5 GB).
  request.mutable_source()->set_src(
      absl::StrCat("module asm \".zero 3000000000\"\n", valid.source().src()));
  EXPECT_TRUE(StatusIs(client.Compile(request), absl::StatusCode::kResourceExhausted, {"memory"}));
  UOPD_EXPECT_OK(client.Compile(valid));
}

TEST(Security, ACallThatEndsStopsItsCompile) {
  // Not demoted: on a loaded machine a demoted render could outlast the deadline, and this is
  // about the worker a call that ends leaves behind.
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("cancel-compile"),
                       {"--compile_workers=1", "--compile_demote_after=0"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  // About 9 s of LLVM work, abandoned after 2.5 s: the only worker is killed and replaced, so
  // the next compile does not queue behind it. (With 1 s, a loaded machine's decode and render
  // of the 40,000-node kernel alone could outlast the deadline, and no worker was reached.)
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(StatusIs(client.Compile(CompileOf(HeavyKernel(64, 10000)), absl::Seconds(2.5)),
                       absl::StatusCode::kDeadlineExceeded));
  UOPD_EXPECT_OK(client.Compile(CompileOf(ScaleKernel(4, 10.0))));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 7.0) << "the abandoned compile kept its worker";
  EXPECT_EQ(daemon.Metric("uopd_compile_worker_events_total{event=\"cancelled\"}"), 1);
}

// User plus system CPU seconds process `pid` has used (from /proc).
double CpuSecondsOf(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which ends at the last ')': utime and stime are 14 and 15.
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

TEST(Security, ACallThatEndsStopsItsDecodeOptimizeAndRender) {
  // A 175,000-node kernel takes the daemon seconds to decode, optimize and render before any
  // compile worker sees it; with a 0.3 s deadline, that work must stop soon after the call does.
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("cancel-render"),
                       {"--compile_workers=1"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  const v1::CompileRequest heavy = CompileOf(HeavyKernel(64, 35000));
  const double before = CpuSecondsOf(daemon.pid());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        StatusIs(client.Compile(heavy, absl::Seconds(0.3)), absl::StatusCode::kDeadlineExceeded));
  }
  const double at_deadline = CpuSecondsOf(daemon.pid());
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const double after = CpuSecondsOf(daemon.pid());
  EXPECT_LT(after - at_deadline, 1.5)
      << "CPU seconds: " << at_deadline - before << " during the calls, " << after - at_deadline
      << " after they ended";
  UOPD_EXPECT_OK(client.Compile(CompileOf(ScaleKernel(4, 10.0))));
}

TEST(Security, ALargeKernelsCompileMemoryIsChargedToItsCaller) {
  // Decoding, optimizing and rendering a kernel takes memory in proportion to its nodes (a
  // 175,000-node one took the daemon ~1 GB against a 256 MiB quota): charged to the caller
  // before the work starts, for kernels over --large_kernel_nodes.
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("large-kernel-memory"),
                       {"--max_client_bytes=4194304", "--large_kernel_nodes=1000"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  const v1::Graph large = HeavyKernel(64, 300);  // ~1,500 nodes: ~12 MiB while compiled
  EXPECT_TRUE(StatusIs(client.Compile(CompileOf(large)), absl::StatusCode::kResourceExhausted,
                       {"nodes", "over its limit of 4194304"}));
  v1::ExecuteRequest execute;
  *execute.add_kernels()->mutable_ast() = large;
  EXPECT_TRUE(StatusIs(client.Execute(execute), absl::StatusCode::kResourceExhausted,
                       {"nodes", "over its limit of 4194304"}));
  // Nothing was left charged, and kernels under the bound are not charged at all.
  UOPD_EXPECT_OK(client.CreateBuffer("CPU", DType::FLOAT32, 1 << 20));
  UOPD_EXPECT_OK(client.Compile(CompileOf(HeavyKernel(64, 100))));
}

TEST(Security, ASearchsScratchMemoryIsChargedToItsCaller) {
  // A search runs candidates on scratch copies of the kernel's buffers: 2 x 16 MiB here, and a
  // pristine copy. With an 8 MiB quota that is the caller's memory it does not have (it ran
  // before, taking 3 GB for a 64 MiB quota with larger buffers).
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("search-scratch"),
                       {"--max_client_bytes=8388608"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::CompileRequest search = CompileOf(ScaleKernel(4 << 20, 3.0));
  search.mutable_optimization()->set_mode(v1::Optimization::SEARCH);
  EXPECT_TRUE(StatusIs(client.Compile(search), absl::StatusCode::kResourceExhausted,
                       {"scratch", "over its limit of 8388608"}));
  // The refused charge left nothing behind, and a search that fits the quota runs.
  UOPD_EXPECT_OK(client.CreateBuffer("CPU", DType::FLOAT32, 1 << 20));
  v1::CompileRequest small = CompileOf(ScaleKernel(1024, 3.0));
  small.mutable_optimization()->set_mode(v1::Optimization::SEARCH);
  UOPD_EXPECT_OK(client.Compile(small));
}

// The review's 175,000-node compiles were refused for the caller's quota only after gRPC had
// parsed them (about 60 ms of a core and tens of megabytes each), as often as a client sent
// them. A large request's parse is now charged before it is parsed, and after a refusal the
// client's next large requests are refused unread for a while; its small ones are served.
TEST(Security, ALargeRequestOverTheQuotaIsRefusedBeforeItIsParsed) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("large-request"),
                       {"--max_client_bytes=33554432"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  const v1::CompileRequest heavy = CompileOf(HeavyKernel(64, 35000));
  ASSERT_GT(heavy.ByteSizeLong(), size_t{1} << 20);
  EXPECT_TRUE(StatusIs(client.Compile(heavy), absl::StatusCode::kResourceExhausted,
                       {"parsing a request of", "over its limit of 33554432"}));
  EXPECT_TRUE(StatusIs(client.Compile(heavy), absl::StatusCode::kResourceExhausted,
                       {"refused unread", "parsing a request of"}));
  UOPD_EXPECT_OK(client.Compile(CompileOf(ScaleKernel(4, 10.0))));
}

// Resident memory of process `pid`, bytes (from /proc).
int64_t ResidentBytesOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    int64_t kb = 0;
    if (line.rfind("VmRSS:", 0) == 0 &&
        absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line.substr(6)), " kB"),
                         &kb)) {
      return kb << 10;
    }
  }
  return -1;
}

TEST(Security, MemoryABurstOfLargeCompilesUsedIsReturned) {
  // Four 175,000-node kernels compiled at once take the daemon's resident memory up by hundreds
  // of MiB; once they are done, the next reap (every second with this --idle_ttl) gives it back.
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("burst-rss"),
                       {"--compile_workers=1", "--idle_ttl=4s"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  UOPD_EXPECT_OK(client.Compile(CompileOf(ScaleKernel(4, 10.0))));
  const int64_t idle = ResidentBytesOf(daemon.pid());
  std::vector<std::future<void>> burst;
  for (int i = 0; i < 4; ++i) {
    burst.push_back(std::async(std::launch::async, [&client, i] {
      (void)client.Compile(CompileOf(HeavyKernel(64, 35000 + i)), absl::Seconds(1));
    }));
  }
  int64_t peak = 0;
  for (int i = 0; i < 20; ++i) {
    peak = std::max(peak, ResidentBytesOf(daemon.pid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& f : burst) f.get();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const int64_t after = ResidentBytesOf(daemon.pid());
  EXPECT_LT(after - idle, (peak - idle) / 3 + (16 << 20))
      << "resident MiB: idle " << (idle >> 20) << ", peak " << (peak >> 20) << ", after "
      << (after >> 20);
}

// The cache service of a daemon, as a peer worker uses it.
class CachePeer {
 public:
  explicit CachePeer(const std::string& address)
      : stub_(v1::CacheService::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}
  v1::CacheGetResponse Get(const std::string& key) {
    grpc::ClientContext context;
    v1::CacheGetRequest request;
    request.set_key(key);
    v1::CacheGetResponse response;
    EXPECT_TRUE(stub_->Get(&context, request, &response).ok());
    return response;
  }
  grpc::Status Put(const std::string& key, const std::string& value, const std::string& signature) {
    grpc::ClientContext context;
    v1::CachePutRequest request;
    request.set_key(key);
    request.set_value(value);
    request.set_signature(signature);
    v1::CachePutResponse response;
    return stub_->Put(&context, request, &response);
  }

 private:
  std::unique_ptr<v1::CacheService::Stub> stub_;
};

std::string WriteClusterKey(const std::string& dir, const std::string& name,
                            const std::string& secret) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << secret;
  chmod(path.c_str(), 0600);
  return path;
}

TEST(Security, PeersShareOnlyEntriesSignedWithTheClusterKey) {
  const std::string dir = testing::TempDir("signed");
  const std::string secret = "0123456789abcdef0123456789abcdef-cluster";
  const std::string key_file = WriteClusterKey(dir, "cluster.key", secret);
  const std::vector<std::string> flags = {"--cluster_key_file=" + key_file,
                                          "--anonymous_rights=compile,run,cache_read,cache_write"};
  DaemonProcess a(UOPD_DAEMON_PATH, dir + "/a", flags);
  DaemonProcess b(UOPD_DAEMON_PATH, dir + "/b", flags);
  ASSERT_TRUE(a.running() && b.running());
  Client client_a(a.address());
  auto k1 = client_a.Compile(CompileOf(ScaleKernel(8, 11.0)));
  auto k2 = client_a.Compile(CompileOf(ScaleKernel(8, 12.0)));
  UOPD_ASSERT_OK(k1);
  UOPD_ASSERT_OK(k2);
  CachePeer peer_a(a.address()), peer_b(b.address());
  v1::CacheGetResponse e1 = peer_a.Get(k1->cache_key());
  v1::CacheGetResponse e2 = peer_a.Get(k2->cache_key());
  ASSERT_TRUE(e1.found() && e2.found());
  EXPECT_EQ(e1.signature(), SignEntry(secret, k1->cache_key(), e1.value()));

  // Unsigned, signed with another key, and K2's entry under K1's key (with K2's signature, or
  // re-signed by an insider who has the key): all refused.
  EXPECT_EQ(peer_b.Put(k1->cache_key(), e1.value(), "").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(peer_b
                .Put(k1->cache_key(), e1.value(),
                     SignEntry("another-cluster-key-0123456789abcdef", k1->cache_key(), e1.value()))
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(peer_b.Put(k1->cache_key(), e2.value(), e2.signature()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  grpc::Status swapped =
      peer_b.Put(k1->cache_key(), e2.value(), SignEntry(secret, k1->cache_key(), e2.value()));
  EXPECT_EQ(swapped.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << swapped.error_message();
  // Tampered after signing.
  std::string tampered = e1.value();
  tampered[tampered.size() / 2] ^= 1;
  EXPECT_EQ(peer_b.Put(k1->cache_key(), tampered, e1.signature()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  // The real entry, signed: B stores it and compiles nothing for K1.
  ASSERT_TRUE(peer_b.Put(k1->cache_key(), e1.value(), e1.signature()).ok());
  Client client_b(b.address());
  auto from_peer = client_b.Compile(CompileOf(ScaleKernel(8, 11.0)));
  UOPD_ASSERT_OK(from_peer);
  EXPECT_EQ(from_peer->cache_tier(), "memory");
  EXPECT_EQ(b.Metric("uopd_compilations_total{backend=\"CPU\"}"), 0);
}

TEST(Security, CacheEntriesAreNotReadableWithoutTheRight) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("cache-read"));
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto compiled = client.Compile(CompileOf(ScaleKernel(8, 14.0)));
  UOPD_ASSERT_OK(compiled);
  // Entries hold another tenant's source text and code: any client could read them.
  auto stub = v1::CacheService::NewStub(
      grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::CacheGetRequest request;
  request.set_key(compiled->cache_key());
  v1::CacheGetResponse response;
  grpc::Status status = stub->Get(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(status.error_message().find("cache_read"), std::string::npos) << status.error_message();
  EXPECT_FALSE(response.found());
  UOPD_EXPECT_OK(client.CacheStats()) << "counters are for everyone";
}

// Runs out[i] = in[i] * factor through `client` and returns out[1].
float RunScale(Client& client, double factor) {
  auto response = client.Execute(ScaleRequest(factor));
  EXPECT_TRUE(response.ok()) << response.status();
  if (!response.ok()) return -1;
  float out[4];
  std::memcpy(out, response->outputs(0).data().data(), sizeof(out));
  return out[1];
}

// Runs the scale kernels x2, x3 and x5 once (checking their results), so their entries are on
// disk, and returns their cache keys K1, K2, K3.
std::array<std::string, 3> RunThreeScales(const DaemonProcess& daemon) {
  Client client(daemon.address());
  EXPECT_EQ(RunScale(client, 2.0), 4.0f);
  EXPECT_EQ(RunScale(client, 3.0), 6.0f);
  EXPECT_EQ(RunScale(client, 5.0), 10.0f);
  return {client.Compile(CompileOf(ScaleKernel(4, 2.0)))->cache_key(),
          client.Compile(CompileOf(ScaleKernel(4, 3.0)))->cache_key(),
          client.Compile(CompileOf(ScaleKernel(4, 5.0)))->cache_key()};
}

TEST(Security, DiskEntriesAreBoundToTheirKeyTheirKernelAndTheirAst) {
  const std::string dir = testing::TempDir("disk-poison");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir,
                       {"--anonymous_rights=compile,run,cache_read,cache_write"});
  ASSERT_TRUE(daemon.running());
  const auto [k1, k2, k3] = RunThreeScales(daemon);
  daemon.Stop();
  {
    // What someone who can write the cache directory and holds the daemon's secret (beside the
    // folder, or the cluster key a peer has) does, keeping each file's MAC right: the checks
    // above the MAC still hold.
    auto secret = ReadSecretFile(dir + ".secret", "the disk cache secret");
    UOPD_ASSERT_OK(secret);
    auto disk = DiskTier::Open(dir, int64_t{1} << 30, {*secret});
    UOPD_ASSERT_OK(disk);
    auto entry2 = (*disk)->Get(k2);
    UOPD_ASSERT_OK(entry2);
    ASSERT_TRUE(entry2->has_value());
    // K2's entry under K1: Execute(K1) ran K2's code (wrong results).
    UOPD_ASSERT_OK((*disk)->Put(k1, **entry2));
    // K3's metadata rewritten to claim 1000 elements: its kernel wrote past a 1-element buffer.
    v1::CachedKernel entry3;
    ASSERT_TRUE(entry3.ParseFromString((*disk)->Get(k3)->value()));
    entry3.mutable_metadata()->mutable_globals(0)->set_size(1000);
    entry3.mutable_metadata()->mutable_global_size(0)->set_constant(1000);
    UOPD_ASSERT_OK((*disk)->Put(k3, entry3.SerializeAsString()));
    // K2's own entry emptied of its bytes, well formed otherwise: failed K2 forever.
    v1::CachedKernel empty;
    ASSERT_TRUE(empty.ParseFromString(**entry2));
    empty.clear_binary();
    UOPD_ASSERT_OK((*disk)->Put(k2, empty.SerializeAsString()));
  }
  for (int restart = 0; restart < 2; ++restart) {
    daemon.Restart();
    ASSERT_TRUE(daemon.running());
    Client client(daemon.address());
    EXPECT_EQ(RunScale(client, 2.0), 4.0f) << "K1 ran another kernel's code";
    EXPECT_EQ(RunScale(client, 3.0), 6.0f) << "K2's empty entry failed it";
    EXPECT_EQ(RunScale(client, 5.0), 10.0f);
    if (restart == 0) {
      EXPECT_GE(daemon.Metric("uopd_cache_requests_total{tier=\"disk\",result=\"corrupt\"}"), 1);
      EXPECT_EQ(daemon.Metric("uopd_compilations_total{backend=\"CPU\"}"), 3)
          << "each bad entry dropped and its kernel compiled again";
    } else {
      EXPECT_EQ(daemon.Metric("uopd_compilations_total{backend=\"CPU\"}"), 0)
          << "the rebuilt entries are good";
    }
  }
}

// What someone who can write the cache directory but cannot read the daemon's secret does:
// puts K2's object into K1's entry (K1's key, AST hash and metadata kept) and recomputes the
// file's SHA-256 header, as the format without a MAC allowed. Returns false if K1 had no entry.
bool ReplaceObject(const std::string& dir, const std::string& k1, const std::string& k2,
                   const std::string& magic) {
  auto path = [&](const std::string& key) {
    return dir + "/" + key.substr(0, 2) + "/" + key + ".uopd";
  };
  auto payload = [&](const std::string& key) {
    std::ifstream in(path(key), std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    return contents.str().substr(std::min<size_t>(contents.str().size(), 7 + 32));
  };
  v1::CachedKernel entry1, entry2;
  if (!entry1.ParseFromString(payload(k1)) || !entry2.ParseFromString(payload(k2))) return false;
  entry1.set_binary(entry2.binary());
  const std::string forged = entry1.SerializeAsString();
  const Digest digest = Sha256Of(forged);
  std::ofstream(path(k1), std::ios::binary | std::ios::trunc)
      << magic << std::string(reinterpret_cast<const char*>(digest.data()), digest.size())
      << forged;
  return true;
}

TEST(Security, ADiskEntryWhoseObjectWasReplacedIsCompiledAgainNotRun) {
  const std::string dir = testing::TempDir("disk-forged");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir);
  ASSERT_TRUE(daemon.running());
  const auto [k1, k2, k3] = RunThreeScales(daemon);
  daemon.Stop();
  // The header of the format before MACs, and today's magic with a digest where the MAC goes.
  ASSERT_TRUE(ReplaceObject(dir, k1, k3, "UOPDK1\n"));
  ASSERT_TRUE(ReplaceObject(dir, k2, k3, "UOPDK2\n"));
  daemon.Restart();
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  EXPECT_EQ(RunScale(client, 2.0), 4.0f) << "K1 ran the object put in its entry";
  EXPECT_EQ(RunScale(client, 3.0), 6.0f) << "K2 ran the object put in its entry";
  EXPECT_EQ(RunScale(client, 5.0), 10.0f);
  EXPECT_EQ(daemon.Metric("uopd_cache_requests_total{tier=\"disk\",result=\"corrupt\"}"), 2);
  EXPECT_EQ(daemon.Metric("uopd_compilations_total{backend=\"CPU\"}"), 2)
      << "each replaced entry dropped and its kernel compiled again";
}

TEST(Security, TheDiskCacheSecretIsOwnerOnlyAndLivesOutsideTheFolder) {
  const std::string dir = testing::TempDir("cache-secret");
  const std::string secret = dir + "/cache.secret";
  {
    DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/cache");
    ASSERT_TRUE(daemon.running());
  }
  struct stat info;
  ASSERT_EQ(stat(secret.c_str(), &info), 0) << "made beside the folder at the first start";
  EXPECT_EQ(info.st_mode & 0777, 0600);
  chmod(secret.c_str(), 0644);
  DaemonProcess readable(UOPD_DAEMON_PATH, dir + "/cache");
  EXPECT_FALSE(readable.running()) << "a secret others can read authenticates nothing";
  DaemonProcess inside(UOPD_DAEMON_PATH, dir + "/other",
                       {"--cache_secret=" + dir + "/other/shards.secret"});
  EXPECT_FALSE(inside.running()) << "whoever writes the folder could replace it";
}

// Sends `bytes` as the request of `method` and returns the status.
grpc::Status RawCall(const std::string& address, const std::string& method,
                     const std::string& bytes) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(status); });
  return done.get_future().get();
}

// A connection to `daemon`'s metrics endpoint with `request` sent; -1 on failure.
int SendToMetrics(const DaemonProcess& daemon, const std::string& request) {
  const int fd = daemon.ConnectMetrics();
  if (fd >= 0) (void)!write(fd, request.data(), request.size());
  return fd;
}

// Requests that never finish (headers half sent) take none of the endpoint's time past a few
// seconds: two of them once blinded /metrics until they closed.
TEST(Security, HalfSentHttpRequestsDoNotBlindTheMetricsEndpoint) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("metrics-slowloris"));
  ASSERT_TRUE(daemon.running());
  std::vector<int> stalled;
  for (int i = 0; i < 12; ++i) {  // more than the endpoint's threads
    stalled.push_back(SendToMetrics(daemon, "GET /metrics HTTP/1.1\r\n"));
    ASSERT_GE(stalled.back(), 0);
  }
  const auto start = std::chrono::steady_clock::now();
  int fd = SendToMetrics(daemon, "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n");
  ASSERT_GE(fd, 0);
  timeval timeout{15, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string response;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
  close(fd);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(response.find("uopd_"), std::string::npos) << "no scrape within 15 s";
  EXPECT_LT(seconds, 8.0);
  for (int s : stalled) close(s);
}

TEST(Security, AMalformedRequestIsInvalidArgumentNotInternal) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("malformed"));
  ASSERT_TRUE(daemon.running());
  // Field 1 (the kernels of an ExecuteRequest) as a length-delimited field running past the end.
  const std::string garbage("\x0a\xff\xff\xff\x0f\x01\x02", 7);
  for (const char* method : {"/uopd.v1.KernelService/Execute", "/uopd.v1.KernelService/Compile",
                             "/uopd.v1.KernelService/ReadBuffer", "/uopd.v1.CacheService/Get"}) {
    grpc::Status status = RawCall(daemon.address(), method, garbage);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_NE(status.error_message().find("does not parse"), std::string::npos)
        << method << ": " << status.error_message();
  }
  Client client(daemon.address());
  UOPD_EXPECT_OK(client.ListDevices());
}

TEST(Security, ACacheDirectoryThatCannotBeWrittenLeavesTheMemoryTier) {
  const std::string dir = testing::TempDir("unwritable");
  // A regular file where a directory should be: no one, root included, can create the cache.
  std::ofstream(dir + "/not-a-directory") << "x";
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/state",
                       {"--cache_dir=" + dir + "/not-a-directory/cache"});
  ASSERT_TRUE(daemon.running()) << "the daemon must start without its disk cache";
  Client client(daemon.address());
  auto compiled = client.Compile(CompileOf(ScaleKernel(4, 13.0)));
  UOPD_ASSERT_OK(compiled);
  auto again = client.Compile(CompileOf(ScaleKernel(4, 13.0)));
  UOPD_ASSERT_OK(again);
  EXPECT_EQ(again->cache_tier(), "memory");
}

}  // namespace
}  // namespace uopd
