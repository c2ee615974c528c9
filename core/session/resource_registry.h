// ResourceRegistry: the buffers and plans clients create, by handle, each owned by the identity
// that created it, and the memory quotas they draw on.
//
// Another identity asking for a handle gets NOT_FOUND, exactly as for a handle that never
// existed, so handles leak nothing; handles are 128 random bits from the kernel's CSPRNG.
//
// Quotas hold memory, not handles: every allocation a client causes (a buffer behind a handle,
// an inline buffer of an Execute, an inline buffer a plan keeps) is charged to its identity's
// quota key until the memory is really freed, i.e. until the last handle, plan or call holding
// it lets go. Freeing a handle a plan still uses releases nothing until the plan goes.
//
// Resources idle past a TTL are reclaimed; a buffer a plan uses counts as used whenever the
// plan runs.
//
// Sessions end resources with their client: a session is opened by one identity, and a buffer
// or plan created naming it belongs to it as well as to the identity. Ending the session (the
// server does when the client's session call ends: closed, or the process gone) frees all of
// them at once, each as FreeBuffer or ReleasePlan would. Session ids are 128 random bits; a
// session another identity opened is NOT_FOUND, as if it did not exist. Sessions are bounded
// per quota key and in all, as buffers and plans are.
#ifndef UOPD_CORE_SESSION_RESOURCE_REGISTRY_H_
#define UOPD_CORE_SESSION_RESOURCE_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/plan/device_buffer.h"
#include "core/plan/execution_plan.h"
#include "core/session/identity.h"

namespace uopd {

struct RegistryLimits {
  absl::Duration idle_ttl = absl::Minutes(30);
  int64_t max_buffer_bytes = int64_t{4} << 30;    // one allocation
  int64_t max_identity_bytes = int64_t{4} << 30;  // everything charged to one quota key
  int64_t max_total_bytes = int64_t{12} << 30;    // everything charged to anyone
  int64_t max_identity_buffers = 100'000;
  int64_t max_identity_plans = 10'000;
  int64_t max_identity_sessions = 256;  // open at once, per quota key
  int64_t max_sessions = 4096;          // open at once, in all

  // Defaults for a host with `memory_bytes` of RAM: a quarter per buffer and per identity,
  // three quarters in all, so no set of clients can take the host's memory.
  static RegistryLimits ForHostMemory(int64_t memory_bytes);
};

struct RegistryStats {
  int64_t buffers = 0;
  int64_t buffer_bytes = 0;   // behind handles
  int64_t charged_bytes = 0;  // all memory charged to quotas (handles, plans, calls in flight)
  int64_t plans = 0;
  int64_t reclaimed = 0;       // resources freed for being idle, since start
  int64_t sessions = 0;        // open now
  int64_t sessions_ended = 0;  // since start
  int64_t session_freed = 0;   // buffers and plans freed by their session's end, since start
};

// Safe for concurrent use.
class ResourceRegistry {
 public:
  explicit ResourceRegistry(RegistryLimits limits = {});

  // `bytes` of zeroed memory on `device`, charged to `who`'s quota until the storage is freed.
  // RESOURCE_EXHAUSTED, naming the limit, before any device memory is touched.
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> Allocate(const Identity& who, Device& device,
                                                         int64_t bytes);

  // `bytes` charged to `who`'s quota with no allocation of the registry's behind it (memory the
  // daemon takes for a call of `who`'s: a search's scratch buffers), until the returned token's
  // last holder lets go. RESOURCE_EXHAUSTED, naming the limit, when it does not fit.
  absl::StatusOr<std::shared_ptr<const void>> Charge(const Identity& who, int64_t bytes);

  // A new session of `who`'s: its id ("sess-" and 32 hex digits). RESOURCE_EXHAUSTED naming
  // the bound when `who`'s quota key, or the server, has as many open as it may.
  absl::StatusOr<std::string> OpenSession(const Identity& who);
  // OK when `session` is open and `who`'s; NOT_FOUND otherwise (another identity's session is
  // indistinguishable from none).
  absl::Status CheckSession(const Identity& who, const std::string& session) const;
  // Ends the session and frees what was created in it; returns how many buffers and plans that
  // was (0 for a session that is not open). Only the session's own call ends it: whoever holds
  // the id ends nothing by knowing it.
  int EndSession(const std::string& session);

  // `session`: "" or an open session of `who`'s that the buffer also belongs to (NOT_FOUND
  // otherwise, and nothing is added).
  absl::StatusOr<std::string> AddBuffer(const Identity& who, BufferView view,
                                        const std::string& session = "");
  absl::StatusOr<BufferView> GetBuffer(const Identity& who, const std::string& handle);
  absl::Status FreeBuffer(const Identity& who, const std::string& handle);

  // `handles`: the buffer handles the plan was built with; they count as used when it runs.
  // `session` as for AddBuffer.
  absl::StatusOr<std::string> AddPlan(const Identity& who, std::shared_ptr<ExecutionPlan> plan,
                                      std::vector<std::string> handles,
                                      const std::string& session = "");
  absl::StatusOr<std::shared_ptr<ExecutionPlan>> GetPlan(const Identity& who,
                                                         const std::string& id);
  absl::Status ReleasePlan(const Identity& who, const std::string& id);

  // Frees what has been idle longer than the TTL at `now`; returns how many were freed.
  int ReapIdle(absl::Time now);
  RegistryStats stats() const;
  // Bytes charged to `quota_key` now.
  int64_t ChargedBytes(const std::string& quota_key) const;

 private:
  // The quota accounts, shared with every allocation so a charge can outlive the registry.
  struct Ledger {
    mutable absl::Mutex mu;
    absl::flat_hash_map<std::string, int64_t> charged ABSL_GUARDED_BY(mu);
    int64_t total ABSL_GUARDED_BY(mu) = 0;
  };
  struct BufferEntry {
    std::string owner;
    std::string quota_key;
    BufferView view;
    absl::Time last_used;
    std::string session;  // "" for none
  };
  struct PlanEntry {
    std::string owner;
    std::string quota_key;
    std::shared_ptr<ExecutionPlan> plan;
    std::vector<std::string> handles;
    absl::Time last_used;
    std::string session;
    std::shared_ptr<const void> charge;  // the plan's bookkeeping, charged to its quota
  };
  struct SessionEntry {
    std::string owner;
    std::string quota_key;
    absl::flat_hash_set<std::string> buffers;  // handles created in the session, still held
    absl::flat_hash_set<std::string> plans;
  };
  struct Counts {
    int64_t buffers = 0;
    int64_t plans = 0;
    int64_t sessions = 0;
  };

  absl::Status CheckSessionLocked(const Identity& who, const std::string& session) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Takes the buffer (plan) out of its session's list, when it has one.
  void ForgetInSession(const BufferEntry& entry, const std::string& handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForgetInSession(const PlanEntry& entry, const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RegistryLimits limits_;
  const std::shared_ptr<Ledger> ledger_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, BufferEntry> buffers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, PlanEntry> plans_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, SessionEntry> sessions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Counts> counts_ ABSL_GUARDED_BY(mu_);  // by quota key
  int64_t reclaimed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sessions_ended_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t session_freed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_SESSION_RESOURCE_REGISTRY_H_
