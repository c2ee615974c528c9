// Security probes against a real daemon: each is something an attacker with only network access
// to the gRPC port tried, repeated as a test that must get a clean status while the daemon
// serves on.
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
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

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
}

TEST(Security, InvalidAssemblyInClientSourceFailsTheCallNotTheDaemon) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("bad-asm"), {"--allow_client_source"});
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

}  // namespace
}  // namespace uopd
