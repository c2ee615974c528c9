#include "core/util/fair_share.h"

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace uopd {
namespace {

bool Never() { return false; }

TEST(FairShare, AloneACallerTakesEverySlot) {
  FairShare share(3);
  EXPECT_TRUE(share.Acquire("alice", Never));
  EXPECT_TRUE(share.Acquire("alice", Never));
  EXPECT_TRUE(share.Acquire("alice", Never));
  EXPECT_EQ(share.Held("alice"), 3);
}

TEST(FairShare, AWaiterGivesUpWhenAsked) {
  FairShare share(1);
  ASSERT_TRUE(share.Acquire("alice", Never));
  std::atomic<bool> stop{false};
  auto waiting = std::async(std::launch::async,
                            [&] { return share.Acquire("bob", [&] { return stop.load(); }); });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  stop = true;
  EXPECT_FALSE(waiting.get());
  EXPECT_EQ(share.Held("bob"), 0);
  // The slot bob gave up waiting for still goes to the next caller once freed.
  share.Release("alice");
  EXPECT_TRUE(share.Acquire("carol", Never));
}

TEST(FairShare, OneSlotStaysFreeForOthersWhoWereServedLately) {
  FairShare share(2);
  ASSERT_TRUE(share.Acquire("bob", Never));
  share.Release("bob");  // bob was served a moment ago
  ASSERT_TRUE(share.Acquire("alice", Never));
  // alice may not take the last slot while bob counts as active...
  std::atomic<bool> stop{false};
  auto second = std::async(std::launch::async,
                           [&] { return share.Acquire("alice", [&] { return stop.load(); }); });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  // ...so bob gets it at once.
  EXPECT_TRUE(share.Acquire("bob", Never));
  stop = true;
  EXPECT_FALSE(second.get());
}

TEST(FairShare, TheReserveEndsWithTheWindow) {
  FairShare share(2, absl::Milliseconds(50));
  ASSERT_TRUE(share.Acquire("bob", Never));
  share.Release("bob");
  ASSERT_TRUE(share.Acquire("alice", Never));
  // Once bob has not been served for the window, alice takes the second slot too.
  EXPECT_TRUE(share.Acquire("alice", Never));
  EXPECT_EQ(share.Held("alice"), 2);
}

TEST(FairShare, AFreedSlotGoesToTheShareHoldingFewest) {
  FairShare share(2, absl::ZeroDuration());
  ASSERT_TRUE(share.Acquire("alice", Never));
  ASSERT_TRUE(share.Acquire("alice", Never));
  // alice queues a third before bob queues his first: bob's still goes first.
  auto alice = std::async(std::launch::async, [&] { return share.Acquire("alice", Never); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto bob = std::async(std::launch::async, [&] { return share.Acquire("bob", Never); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  share.Release("alice");
  EXPECT_TRUE(bob.get());
  EXPECT_EQ(alice.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  share.Release("alice");
  EXPECT_TRUE(alice.get());
}

TEST(FairShare, ASlotIsGivenBackWhenItsHolderEnds) {
  FairShare share(1);
  {
    std::optional<FairShare::Slot> slot = share.Take("alice", Never);
    ASSERT_TRUE(slot.has_value());
    EXPECT_EQ(share.Held("alice"), 1);
  }
  EXPECT_EQ(share.Held("alice"), 0);
  EXPECT_TRUE(share.Take("bob", Never).has_value());
}

}  // namespace
}  // namespace uopd
