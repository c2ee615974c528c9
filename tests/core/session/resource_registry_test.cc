// Client-owned resources: ownership, quotas on memory, idle reclamation.
#include "core/session/resource_registry.h"

#include <set>

#include "absl/time/clock.h"
#include "backends/cpu/cpu_device.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::StatusIs;

Identity Named(const std::string& name) { return Identity{name, name, kAllRights, false}; }

class ResourceRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(nullptr);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }
  // `n` bytes charged to `who`.
  absl::StatusOr<BufferView> Bytes(ResourceRegistry& registry, const Identity& who, size_t n) {
    auto storage = registry.Allocate(who, *device_, static_cast<int64_t>(n));
    if (!storage.ok()) return storage.status();
    return BufferView::Whole(*std::move(storage), Scalar::kUint8);
  }
  std::unique_ptr<Device> device_;
};

TEST_F(ResourceRegistryTest, HandlesBelongToTheirOwner) {
  ResourceRegistry registry;
  const Identity alice = Named("alice"), bob = Named("bob");
  auto handle = registry.AddBuffer(alice, *Bytes(registry, alice, 16));
  UOPD_ASSERT_OK(handle);
  UOPD_EXPECT_OK(registry.GetBuffer(alice, *handle));
  EXPECT_TRUE(StatusIs(registry.GetBuffer(bob, *handle), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(registry.FreeBuffer(bob, *handle), absl::StatusCode::kNotFound));
  UOPD_EXPECT_OK(registry.FreeBuffer(alice, *handle));
  EXPECT_TRUE(StatusIs(registry.GetBuffer(alice, *handle), absl::StatusCode::kNotFound));
  auto other = registry.AddBuffer(alice, *Bytes(registry, alice, 16));
  UOPD_ASSERT_OK(other);
  EXPECT_NE(*other, *handle) << "handles are not reused";
}

TEST_F(ResourceRegistryTest, HandlesAre128RandomBits) {
  ResourceRegistry registry;
  const Identity alice = Named("alice");
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    auto handle = registry.AddBuffer(alice, *Bytes(registry, alice, 1));
    UOPD_ASSERT_OK(handle);
    ASSERT_EQ(handle->size(), 4 + 32) << *handle;  // "buf-" and 32 hex digits
    seen.insert(handle->substr(4, 8));
  }
  // Consecutive handles share no structure (an mt19937_64 stream was predictable from 160).
  EXPECT_EQ(seen.size(), 200u);
}

TEST_F(ResourceRegistryTest, QuotasCountMemoryUntilItIsReallyFreed) {
  RegistryLimits limits;
  limits.max_buffer_bytes = 100;
  limits.max_identity_bytes = 150;
  limits.max_total_bytes = 250;
  ResourceRegistry registry(limits);
  const Identity alice = Named("alice"), bob = Named("bob"), carol = Named("carol");
  EXPECT_TRUE(StatusIs(Bytes(registry, alice, 101), absl::StatusCode::kResourceExhausted,
                       {"exceeds the limit of 100"}));
  auto held = Bytes(registry, alice, 100);
  UOPD_ASSERT_OK(held);
  // A buffer without a handle (an inline buffer of a call in flight) counts too.
  EXPECT_TRUE(StatusIs(Bytes(registry, alice, 60), absl::StatusCode::kResourceExhausted,
                       {"over its limit of 150"}));
  auto handle = registry.AddBuffer(alice, *held);
  UOPD_ASSERT_OK(handle);
  UOPD_EXPECT_OK(Bytes(registry, bob, 100)) << "quotas are per identity";
  // Held by a plan (here: a copy of the view), freeing the handle releases nothing.
  BufferView kept_by_a_plan = *held;
  held = absl::UnknownError("dropped");
  UOPD_ASSERT_OK(registry.FreeBuffer(alice, *handle));
  EXPECT_EQ(registry.ChargedBytes("alice"), 100);
  EXPECT_TRUE(StatusIs(Bytes(registry, alice, 60), absl::StatusCode::kResourceExhausted));
  kept_by_a_plan = BufferView{};
  EXPECT_EQ(registry.ChargedBytes("alice"), 0) << "released with the last holder";
  UOPD_EXPECT_OK(Bytes(registry, alice, 60));
  // Everyone together: bob and carol hold 200 of the server-wide 250.
  auto b1 = Bytes(registry, bob, 100);
  auto c1 = Bytes(registry, carol, 100);
  UOPD_ASSERT_OK(b1);
  UOPD_ASSERT_OK(c1);
  EXPECT_TRUE(StatusIs(Bytes(registry, alice, 100), absl::StatusCode::kResourceExhausted,
                       {"server's client memory"}));
}

TEST_F(ResourceRegistryTest, ChargesWithoutABufferCountUntilTheirLastHolderGoes) {
  RegistryLimits limits;
  limits.max_identity_bytes = 150;
  limits.max_total_bytes = 250;
  ResourceRegistry registry(limits);
  const Identity alice = Named("alice");
  auto scratch = registry.Charge(alice, 120);  // a search's scratch, say
  UOPD_ASSERT_OK(scratch);
  EXPECT_EQ(registry.ChargedBytes("alice"), 120);
  EXPECT_TRUE(StatusIs(Bytes(registry, alice, 40), absl::StatusCode::kResourceExhausted,
                       {"over its limit of 150"}));
  EXPECT_TRUE(StatusIs(registry.Charge(alice, 31), absl::StatusCode::kResourceExhausted,
                       {"over its limit of 150"}));
  std::shared_ptr<const void> shared = *scratch;
  scratch = absl::UnknownError("dropped");
  EXPECT_EQ(registry.ChargedBytes("alice"), 120) << "still held";
  shared.reset();
  EXPECT_EQ(registry.ChargedBytes("alice"), 0);
  EXPECT_EQ(registry.stats().charged_bytes, 0);
  UOPD_EXPECT_OK(Bytes(registry, alice, 150));
}

TEST_F(ResourceRegistryTest, ReclaimsWhatStaysIdlePastTheTtl) {
  RegistryLimits limits;
  limits.idle_ttl = absl::Minutes(1);
  ResourceRegistry registry(limits);
  const Identity alice = Named("alice");
  auto idle = registry.AddBuffer(alice, *Bytes(registry, alice, 8));
  auto used = registry.AddBuffer(alice, *Bytes(registry, alice, 8));
  UOPD_ASSERT_OK(idle);
  UOPD_ASSERT_OK(used);
  EXPECT_EQ(registry.ReapIdle(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_EQ(registry.ReapIdle(absl::Now() + absl::Minutes(2)), 2);
  EXPECT_TRUE(StatusIs(registry.GetBuffer(alice, *idle), absl::StatusCode::kNotFound));
  EXPECT_EQ(registry.stats().reclaimed, 2);
  EXPECT_EQ(registry.stats().buffer_bytes, 0);
  EXPECT_EQ(registry.ChargedBytes("alice"), 0) << "reclaimed bytes no longer count";
}

TEST_F(ResourceRegistryTest, ABufferAPlanUsesIsNotIdleWhileThePlanRuns) {
  RegistryLimits limits;
  limits.idle_ttl = absl::Milliseconds(300);
  ResourceRegistry registry(limits);
  const Identity alice = Named("alice");
  auto handle = registry.AddBuffer(alice, *Bytes(registry, alice, 8));
  UOPD_ASSERT_OK(handle);
  auto plan = registry.AddPlan(alice, nullptr, {*handle});
  UOPD_ASSERT_OK(plan);
  // The plan runs every 100 ms; the handle itself is never touched directly.
  for (int i = 0; i < 6; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    UOPD_ASSERT_OK(registry.GetPlan(alice, *plan));
    EXPECT_EQ(registry.ReapIdle(absl::Now()), 0);
  }
  UOPD_EXPECT_OK(registry.GetBuffer(alice, *handle));
}

TEST_F(ResourceRegistryTest, EndingASessionFreesWhatWasCreatedInItAndNothingElse) {
  ResourceRegistry registry;
  const Identity alice = Named("alice");
  auto session = registry.OpenSession(alice);
  UOPD_ASSERT_OK(session);
  ASSERT_EQ(session->size(), 5 + 32) << *session;  // "sess-" and 32 hex digits
  auto in_session = registry.AddBuffer(alice, *Bytes(registry, alice, 100), *session);
  auto outside = registry.AddBuffer(alice, *Bytes(registry, alice, 10));
  auto freed_early = registry.AddBuffer(alice, *Bytes(registry, alice, 1), *session);
  UOPD_ASSERT_OK(in_session);
  UOPD_ASSERT_OK(outside);
  UOPD_ASSERT_OK(freed_early);
  UOPD_ASSERT_OK(registry.FreeBuffer(alice, *freed_early));
  auto plan = registry.AddPlan(alice, nullptr, {*in_session}, *session);
  UOPD_ASSERT_OK(plan);
  // A plan outside the session keeps the session's buffer's memory, as after FreeBuffer.
  BufferView held_elsewhere;
  {
    auto view = registry.GetBuffer(alice, *in_session);
    UOPD_ASSERT_OK(view);
    held_elsewhere = *view;
  }
  EXPECT_EQ(registry.stats().sessions, 1);

  EXPECT_EQ(registry.EndSession(*session), 2) << "the buffer and the plan; the freed one is gone";
  EXPECT_TRUE(StatusIs(registry.GetBuffer(alice, *in_session), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(registry.GetPlan(alice, *plan), absl::StatusCode::kNotFound));
  UOPD_EXPECT_OK(registry.GetBuffer(alice, *outside));
  EXPECT_EQ(registry.ChargedBytes("alice"), 110) << "still held outside the registry";
  held_elsewhere = BufferView{};
  EXPECT_EQ(registry.ChargedBytes("alice"), 10);
  const RegistryStats stats = registry.stats();
  EXPECT_EQ(stats.sessions, 0);
  EXPECT_EQ(stats.sessions_ended, 1);
  EXPECT_EQ(stats.session_freed, 2);
  EXPECT_EQ(stats.buffers, 1);
  EXPECT_EQ(registry.EndSession(*session), 0) << "ends once";
  // An ended session takes nothing more.
  EXPECT_TRUE(StatusIs(registry.AddBuffer(alice, *Bytes(registry, alice, 1), *session),
                       absl::StatusCode::kNotFound, {"no open session"}));
  EXPECT_EQ(registry.ChargedBytes("alice"), 10) << "the refused buffer's memory went with it";
}

TEST_F(ResourceRegistryTest, OnlyTheOwnerNamesASession) {
  ResourceRegistry registry;
  const Identity alice = Named("alice"), bob = Named("bob");
  auto session = registry.OpenSession(alice);
  UOPD_ASSERT_OK(session);
  UOPD_EXPECT_OK(registry.CheckSession(alice, *session));
  EXPECT_TRUE(StatusIs(registry.CheckSession(bob, *session), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(registry.AddBuffer(bob, *Bytes(registry, bob, 4), *session),
                       absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(registry.AddPlan(bob, nullptr, {}, *session), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(registry.CheckSession(alice, "sess-made-up"), absl::StatusCode::kNotFound));
  EXPECT_EQ(registry.stats().buffers, 0);
  EXPECT_EQ(registry.stats().plans, 0);
}

TEST_F(ResourceRegistryTest, SessionsAreBoundedPerQuotaKeyAndInAll) {
  RegistryLimits limits;
  limits.max_identity_sessions = 2;
  limits.max_sessions = 3;
  ResourceRegistry registry(limits);
  const Identity alice = Named("alice"), bob = Named("bob"), carol = Named("carol");
  auto first = registry.OpenSession(alice);
  UOPD_ASSERT_OK(first);
  UOPD_ASSERT_OK(registry.OpenSession(alice));
  EXPECT_TRUE(StatusIs(registry.OpenSession(alice), absl::StatusCode::kResourceExhausted,
                       {"2 sessions open"}));
  UOPD_ASSERT_OK(registry.OpenSession(bob));
  EXPECT_TRUE(StatusIs(registry.OpenSession(carol), absl::StatusCode::kResourceExhausted,
                       {"server already has 3"}));
  registry.EndSession(*first);
  UOPD_EXPECT_OK(registry.OpenSession(alice)) << "an ended session no longer counts";
  EXPECT_TRUE(StatusIs(registry.OpenSession(carol), absl::StatusCode::kResourceExhausted));
}

}  // namespace
}  // namespace uopd
