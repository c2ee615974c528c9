// ResourceRegistry: the buffers and plans clients create, by handle, each owned by the identity
// that created it. Another identity asking for a handle gets NOT_FOUND, exactly as for a handle
// that never existed, so handles leak nothing. Resources idle past a TTL are reclaimed.
#ifndef UOPD_CORE_SESSION_RESOURCE_REGISTRY_H_
#define UOPD_CORE_SESSION_RESOURCE_REGISTRY_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/plan/device_buffer.h"
#include "core/plan/execution_plan.h"

namespace uopd {

struct RegistryLimits {
  absl::Duration idle_ttl = absl::Minutes(30);
  int64_t max_buffer_bytes = int64_t{16} << 30;  // one buffer
  int64_t max_client_bytes = int64_t{64} << 30;  // all buffers of one identity
  int64_t max_client_buffers = 100'000;
  int64_t max_client_plans = 10'000;
};

struct RegistryStats {
  int64_t buffers = 0;
  int64_t buffer_bytes = 0;
  int64_t plans = 0;
  int64_t reclaimed = 0;  // resources freed for being idle, since start
};

// Safe for concurrent use.
class ResourceRegistry {
 public:
  explicit ResourceRegistry(RegistryLimits limits = {}) : limits_(limits) {}

  // RESOURCE_EXHAUSTED when the buffer or the owner's total would pass the limits; check before
  // allocating with CheckBufferQuota to fail before touching device memory.
  absl::Status CheckBufferQuota(const std::string& owner, int64_t bytes);
  absl::StatusOr<std::string> AddBuffer(const std::string& owner, BufferView view);
  absl::StatusOr<BufferView> GetBuffer(const std::string& owner, const std::string& handle);
  absl::Status FreeBuffer(const std::string& owner, const std::string& handle);

  absl::StatusOr<std::string> AddPlan(const std::string& owner,
                                      std::shared_ptr<ExecutionPlan> plan);
  absl::StatusOr<std::shared_ptr<ExecutionPlan>> GetPlan(const std::string& owner,
                                                         const std::string& id);
  absl::Status ReleasePlan(const std::string& owner, const std::string& id);

  // Frees what has been idle longer than the TTL at `now`; returns how many were freed. A plan
  // keeps the buffers it uses alive (they outlive their handle if it is freed first).
  int ReapIdle(absl::Time now);
  RegistryStats stats() const;

 private:
  struct BufferEntry {
    std::string owner;
    BufferView view;
    absl::Time last_used;
  };
  struct PlanEntry {
    std::string owner;
    std::shared_ptr<ExecutionPlan> plan;
    absl::Time last_used;
  };
  struct OwnerUsage {
    int64_t bytes = 0;
    int64_t buffers = 0;
    int64_t plans = 0;
  };
  static std::string NewHandle(absl::string_view prefix);

  const RegistryLimits limits_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, BufferEntry> buffers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, PlanEntry> plans_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, OwnerUsage> usage_ ABSL_GUARDED_BY(mu_);
  int64_t reclaimed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_SESSION_RESOURCE_REGISTRY_H_
