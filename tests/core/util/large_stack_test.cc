// RunOnLargeStack: the stack it promises, and the priority compile work runs at.
#include "core/util/large_stack.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "gtest/gtest.h"

namespace uopd {
namespace {

int NiceOfThisThread() {
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
}

TEST(LargeStack, RunsAFunctionThatNeedsMoreStackThanAThreadHas) {
  size_t touched = 0;
  RunOnLargeStack(size_t{64} << 20, [&] {
    // 32 MiB on the stack: four times a default thread's 8 MiB.
    volatile char big[size_t{32} << 20];
    std::memset(const_cast<char*>(big), 1, sizeof(big));
    for (size_t i = 0; i < sizeof(big); i += 4096) touched += big[i];
  });
  EXPECT_EQ(touched, (size_t{32} << 20) / 4096);
}

// A client's large compiles slowed every other client's Executes while they ran at the daemon's
// priority; compile threads run nicer, by a fixed amount (nested ones no nicer still), and the
// caller's own priority is untouched.
TEST(LargeStack, CompileThreadsRunAtTheNiceValueSetAndTheCallerKeepsItsOwn) {
  const int own = NiceOfThisThread();
  ASSERT_EQ(errno, 0);
  SetCompileThreadNice(5);
  int inner = -100, nested = -100;
  RunOnLargeStack(size_t{1} << 20, [&] {
    inner = NiceOfThisThread();
    RunOnLargeStack(size_t{1} << 20, [&] { nested = NiceOfThisThread(); });
  });
  SetCompileThreadNice(0);
  int after_reset = -100;
  RunOnLargeStack(size_t{1} << 20, [&] { after_reset = NiceOfThisThread(); });
  EXPECT_EQ(inner, std::min(19, own + 5));
  EXPECT_EQ(nested, std::min(19, own + 5));
  EXPECT_EQ(NiceOfThisThread(), own);
  EXPECT_EQ(after_reset, own);
}

}  // namespace
}  // namespace uopd
