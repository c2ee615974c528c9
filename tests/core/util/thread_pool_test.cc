#include "core/util/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace uopd {
namespace {

TEST(ThreadPool, ParallelForRunsEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.ParallelFor(1000, [&](int i) { hits[i].fetch_add(1); });
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(hits[i].load(), 1) << "index " << i;
}

TEST(ThreadPool, NestedParallelForDoesNotDeadlock) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.ParallelFor(8, [&](int) { pool.ParallelFor(8, [&](int) { total.fetch_add(1); }); });
  EXPECT_EQ(total.load(), 64);
}

TEST(ThreadPool, WorksWithNoWorkers) {
  ThreadPool pool(0);
  int sum = 0;
  pool.ParallelFor(10, [&](int i) { sum += i; });
  EXPECT_EQ(sum, 45);
}

// Idle workers and a waiting caller spin a while before they sleep: the caller must still wait
// for items that outlast the spin (it sleeps, and the last item wakes it), and workers that went
// to sleep must still take later tasks.
TEST(ThreadPool, ParallelForWaitsForItemsLongerThanTheSpinAndWorkersWakeForLaterOnes) {
  ThreadPool pool(1);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::atomic<int>> hits(2);
    std::atomic<bool> other_thread{false};
    const std::thread::id caller = std::this_thread::get_id();
    pool.ParallelFor(2, [&](int i) {
      if (std::this_thread::get_id() != caller) other_thread = true;
      // Longer than any spin: whoever runs the other item is done and waiting by then.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      hits[i].fetch_add(1);
    });
    EXPECT_EQ(hits[0].load(), 1);
    EXPECT_EQ(hits[1].load(), 1);
    EXPECT_TRUE(other_thread.load()) << "round " << round << ": the worker never took an item";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the worker goes to sleep
  }
}

// A plan's caller waits while its kernels run on the pool. With every worker busy running a
// kernel, that kernel's ParallelFor helper sat in the queue and the kernel ran on one core while
// the caller slept (the daemon's per-kernel times were 2x opt_bench's, now and then): a thread
// in HelpUntil runs it.
TEST(ThreadPool, AThreadInHelpUntilRunsTheHelperOfABusyWorkersParallelFor) {
  ThreadPool pool(1);
  std::atomic<bool> done{false};
  std::atomic<int> inside{0}, peak{0}, arrived{0};
  int run = 0;  // a plan's run, as a tag
  ThreadPool::ScopedWork work(&run);
  pool.Schedule([&] {
    pool.ParallelFor(2, [&](int) {
      const int now = inside.fetch_add(1) + 1;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      // Wait for the other half, for 2 s at most.
      arrived.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (arrived.load() < 2 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      inside.fetch_sub(1);
    });
    done.store(true);
    pool.Wake();
  });
  pool.HelpUntil(&run, done);
  EXPECT_EQ(peak.load(), 2) << "the two halves of the worker's loop ran one after the other";
}

TEST(ThreadPool, HelpUntilReturnsAtOnceWhenDone) {
  ThreadPool pool(1);
  std::atomic<bool> done{true};
  int run = 0;
  pool.HelpUntil(&run, done);
}

// A caller helping with its own run must not end up inside another caller's kernel: its reply
// would wait for work that is not its own.
TEST(ThreadPool, HelpUntilRunsOnlyTheTasksOfItsOwnWork) {
  ThreadPool pool(1);
  absl::Notification release;
  std::atomic<bool> started{false}, other_ran{false}, done{false};
  pool.Schedule([&] {
    started.store(true);
    release.WaitForNotification();
  });
  while (!started.load()) std::this_thread::yield();
  int mine = 0, theirs = 0;
  {
    ThreadPool::ScopedWork work(&theirs);
    pool.Schedule([&] { other_ran.store(true); });
  }
  {
    ThreadPool::ScopedWork work(&mine);
    pool.Schedule([&] {
      done.store(true);
      pool.Wake();
    });
  }
  pool.HelpUntil(&mine, done);
  EXPECT_FALSE(other_ran.load());
  release.Notify();
}

}  // namespace
}  // namespace uopd
