// RunOnLargeStack: the stack it promises, and the priority compile work runs at.
#include "core/util/large_stack.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace uopd {
namespace {

int NiceOfThisThread() {
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
}

// Kernels run on ordinary threads: the daemon gives those at least kKernelThreadStackBytes
// whatever `ulimit -s` says (a 1 MiB kernel frame on a 256 KiB stack stepped over its guard).
TEST(LargeStack, ThreadsStartedAfterwardsGetAtLeastTheStackAsked) {
  constexpr size_t kAsked = size_t{24} << 20;  // above any default here
  EXPECT_GE(EnsureThreadStacksOfAtLeast(kAsked), kAsked);
  size_t stack = 0;
  std::thread([&] {
    pthread_attr_t attr;
    ASSERT_EQ(pthread_getattr_np(pthread_self(), &attr), 0);
    pthread_attr_getstacksize(&attr, &stack);
    pthread_attr_destroy(&attr);
  }).join();
  EXPECT_GE(stack, kAsked);
  // Never lowered: asking for less keeps what is in force.
  EXPECT_GE(EnsureThreadStacksOfAtLeast(size_t{1} << 20), kAsked);
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
  SetCompileThreadPriority({.nice = 5, .demote_after = absl::ZeroDuration()});
  int inner = -100, nested = -100;
  RunOnLargeStack(size_t{1} << 20, [&] {
    inner = NiceOfThisThread();
    RunOnLargeStack(size_t{1} << 20, [&] { nested = NiceOfThisThread(); });
  });
  SetCompileThreadPriority({.nice = 0, .demote_after = absl::ZeroDuration()});
  int after_reset = -100;
  RunOnLargeStack(size_t{1} << 20, [&] { after_reset = NiceOfThisThread(); });
  EXPECT_EQ(inner, std::min(19, own + 5));
  EXPECT_EQ(nested, std::min(19, own + 5));
  EXPECT_EQ(NiceOfThisThread(), own);
  EXPECT_EQ(after_reset, own);
}

// The daemon's side of a kernel that takes seconds (optimizing, rendering a huge AST) ran at the
// process's priority for all of it; past demote_after its thread is made demoted_nice nicer,
// while work that ends sooner keeps the compile priority.
TEST(LargeStack, CompileThreadsRunningPastTheDemotionTimeAreMadeNicer) {
  const int own = NiceOfThisThread();
  ASSERT_EQ(errno, 0);
  SetCompileThreadPriority({.nice = 2, .demote_after = absl::Milliseconds(100), .demoted_nice = 5});
  int quick = -100, long_start = -100, long_end = -100;
  RunOnLargeStack(size_t{1} << 20, [&] { quick = NiceOfThisThread(); });
  RunOnLargeStack(size_t{1} << 20, [&] {
    long_start = NiceOfThisThread();
    const absl::Time until = absl::Now() + absl::Seconds(5);
    while (absl::Now() < until && NiceOfThisThread() == long_start) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    long_end = NiceOfThisThread();
  });
  SetCompileThreadPriority({.nice = 0, .demote_after = absl::ZeroDuration()});
  EXPECT_EQ(quick, std::min(19, own + 2));
  EXPECT_EQ(long_start, std::min(19, own + 2));
  EXPECT_EQ(long_end, std::min(19, own + 7));
  EXPECT_EQ(NiceOfThisThread(), own);
}

}  // namespace
}  // namespace uopd
