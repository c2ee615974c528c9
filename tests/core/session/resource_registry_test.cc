// Client-owned resources: ownership, quotas, idle reclamation.
#include "core/session/resource_registry.h"

#include "absl/time/clock.h"
#include "backends/cpu/cpu_device.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::StatusIs;

class ResourceRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(nullptr);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }
  BufferView Bytes(size_t n) {
    return *BufferView::Whole(*DeviceBuffer::Create(*device_, n), Scalar::kUint8);
  }
  std::unique_ptr<Device> device_;
};

TEST_F(ResourceRegistryTest, HandlesBelongToTheirOwner) {
  ResourceRegistry registry;
  auto handle = registry.AddBuffer("alice", Bytes(16));
  UOPD_ASSERT_OK(handle);
  UOPD_EXPECT_OK(registry.GetBuffer("alice", *handle));
  EXPECT_TRUE(StatusIs(registry.GetBuffer("bob", *handle), absl::StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(registry.FreeBuffer("bob", *handle), absl::StatusCode::kNotFound));
  UOPD_EXPECT_OK(registry.FreeBuffer("alice", *handle));
  EXPECT_TRUE(StatusIs(registry.GetBuffer("alice", *handle), absl::StatusCode::kNotFound));
  auto other = registry.AddBuffer("alice", Bytes(16));
  UOPD_ASSERT_OK(other);
  EXPECT_NE(*other, *handle) << "handles are not reused";
}

TEST_F(ResourceRegistryTest, EnforcesPerBufferAndPerClientLimits) {
  RegistryLimits limits;
  limits.max_buffer_bytes = 100;
  limits.max_client_bytes = 150;
  ResourceRegistry registry(limits);
  EXPECT_TRUE(StatusIs(registry.CheckBufferQuota("alice", 101),
                       absl::StatusCode::kResourceExhausted, {"exceeds the limit of 100"}));
  UOPD_ASSERT_OK(registry.AddBuffer("alice", Bytes(100)));
  EXPECT_TRUE(StatusIs(registry.AddBuffer("alice", Bytes(60)), absl::StatusCode::kResourceExhausted,
                       {"over the limit of 150"}));
  UOPD_EXPECT_OK(registry.AddBuffer("bob", Bytes(60))) << "quotas are per client";
  EXPECT_EQ(registry.stats().buffers, 2);
  EXPECT_EQ(registry.stats().buffer_bytes, 160);
}

TEST_F(ResourceRegistryTest, ReclaimsWhatStaysIdlePastTheTtl) {
  RegistryLimits limits;
  limits.idle_ttl = absl::Minutes(1);
  ResourceRegistry registry(limits);
  auto idle = registry.AddBuffer("alice", Bytes(8));
  auto used = registry.AddBuffer("alice", Bytes(8));
  UOPD_ASSERT_OK(idle);
  UOPD_ASSERT_OK(used);
  EXPECT_EQ(registry.ReapIdle(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_EQ(registry.ReapIdle(absl::Now() + absl::Minutes(2)), 2);
  EXPECT_TRUE(StatusIs(registry.GetBuffer("alice", *idle), absl::StatusCode::kNotFound));
  EXPECT_EQ(registry.stats().reclaimed, 2);
  EXPECT_EQ(registry.stats().buffer_bytes, 0);
  UOPD_EXPECT_OK(registry.AddBuffer("alice", Bytes(8))) << "reclaimed bytes no longer count";
}

}  // namespace
}  // namespace uopd
