// The CPU compiler's limits on what it emits: a kernel runs on the daemon's own threads.
#include "backends/cpu/llvm_compiler.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::StatusIs;

// A function whose frame holds `bytes` of array the optimizer cannot remove (each element is
// written through a volatile store and one is read back).
std::string KernelWithFrame(uint64_t bytes) {
  return absl::StrCat(R"(define i32 @big(ptr %out, i64 %i) {
  %a = alloca [)",
                      bytes, R"( x i8], align 16
  %p = getelementptr inbounds [)",
                      bytes, R"( x i8], ptr %a, i64 0, i64 %i
  store volatile i8 7, ptr %p
  %v = load volatile i8, ptr %p
  store i8 %v, ptr %out
  ret i32 0
}
)");
}

TEST(LlvmCompiler, AKernelWhoseStackFrameWouldOverrunAThreadsStackIsRefused) {
  const LlvmCompiler compiler;
  EXPECT_TRUE(compiler.CompileIr(KernelWithFrame(64 * 1024), "big").ok());
  // 16 MiB: two ordinary thread stacks; it used to compile and step over the guard page.
  EXPECT_TRUE(StatusIs(compiler.CompileIr(KernelWithFrame(uint64_t{16} << 20), "big"),
                       absl::StatusCode::kResourceExhausted,
                       {"kernel big needs a stack frame of", "at most 1048576"}));
}

}  // namespace
}  // namespace uopd
