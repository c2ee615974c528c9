// Security probes against a real daemon: each is something an attacker with only network access
// to the gRPC port tried, repeated as a test that must get a clean status while the daemon
// serves on.
#include <chrono>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "client/uopd_client.h"
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
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("cancel-compile"),
                       {"--compile_workers=1"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  // About 9 s of LLVM work, abandoned after 1 s: the only worker is killed and replaced, so
  // the next compile does not queue behind it.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(StatusIs(client.Compile(CompileOf(HeavyKernel(64, 10000)), absl::Seconds(1)),
                       absl::StatusCode::kDeadlineExceeded));
  UOPD_EXPECT_OK(client.Compile(CompileOf(ScaleKernel(4, 10.0))));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << "the abandoned compile kept its worker";
  EXPECT_EQ(daemon.Metric("uopd_compile_worker_events_total{event=\"cancelled\"}"), 1);
}

}  // namespace
}  // namespace uopd
