#include "core/session/resource_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

absl::Status NotFound(absl::string_view kind, const std::string& handle) {
  return absl::NotFoundError(absl::StrCat("no ", kind, " '", handle, "' for this client"));
}

}  // namespace

RegistryLimits RegistryLimits::ForHostMemory(int64_t memory_bytes) {
  RegistryLimits limits;
  if (memory_bytes <= 0) return limits;
  limits.max_buffer_bytes = memory_bytes / 4;
  limits.max_identity_bytes = memory_bytes / 4;
  limits.max_total_bytes = memory_bytes / 4 * 3;
  return limits;
}

ResourceRegistry::ResourceRegistry(RegistryLimits limits)
    : limits_(limits), ledger_(std::make_shared<Ledger>()) {}

absl::StatusOr<std::shared_ptr<const void>> ResourceRegistry::Charge(const Identity& who,
                                                                     int64_t bytes) {
  {
    absl::MutexLock lock(&ledger_->mu);
    int64_t& charged = ledger_->charged[who.quota_key];
    if (charged + bytes > limits_.max_identity_bytes) {
      const int64_t would_be = charged + bytes;
      if (charged == 0) ledger_->charged.erase(who.quota_key);
      return absl::ResourceExhaustedError(
          absl::StrCat("this client's memory would reach ", would_be, " bytes, over its limit of ",
                       limits_.max_identity_bytes,
                       " (buffers, inline buffers, plans and a search's scratch count until they "
                       "are freed)"));
    }
    if (ledger_->total + bytes > limits_.max_total_bytes) {
      if (charged == 0) ledger_->charged.erase(who.quota_key);
      return absl::ResourceExhaustedError(
          absl::StrCat("the server's client memory would reach ", ledger_->total + bytes,
                       " bytes, over its limit of ", limits_.max_total_bytes));
    }
    charged += bytes;
    ledger_->total += bytes;
  }
  // Gives the bytes back when the last holder lets go.
  struct Charged {
    std::shared_ptr<Ledger> ledger;
    std::string key;
    int64_t bytes;
    ~Charged() {
      absl::MutexLock lock(&ledger->mu);
      auto it = ledger->charged.find(key);
      it->second -= bytes;
      if (it->second == 0) ledger->charged.erase(it);
      ledger->total -= bytes;
    }
  };
  auto charge = std::make_shared<Charged>();  // built in place: a copy's destructor would refund
  charge->ledger = ledger_;
  charge->key = who.quota_key;
  charge->bytes = bytes;
  return std::shared_ptr<const void>(std::move(charge));
}

absl::StatusOr<std::shared_ptr<DeviceBuffer>> ResourceRegistry::Allocate(const Identity& who,
                                                                         Device& device,
                                                                         int64_t bytes) {
  if (bytes > limits_.max_buffer_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a buffer of ", bytes, " bytes exceeds the limit of ", limits_.max_buffer_bytes));
  }
  UOPD_ASSIGN_OR_RETURN(std::shared_ptr<const void> charge, Charge(who, bytes));
  struct Charged {
    std::shared_ptr<const void> charge;
    std::shared_ptr<DeviceBuffer> storage;  // destroyed first: freed before the charge goes
  };
  absl::StatusOr<std::shared_ptr<DeviceBuffer>> storage =
      DeviceBuffer::Create(device, static_cast<size_t>(bytes));
  if (!storage.ok()) return storage.status();  // the charge is given back
  auto held = std::make_shared<Charged>();
  held->charge = std::move(charge);
  held->storage = *std::move(storage);
  DeviceBuffer* raw = held->storage.get();
  // Aliasing: holders see the DeviceBuffer; the last of them to go frees the charge too.
  return std::shared_ptr<DeviceBuffer>(std::move(held), raw);
}

absl::StatusOr<std::string> ResourceRegistry::OpenSession(const Identity& who) {
  absl::MutexLock lock(&mu_);
  Counts& counts = counts_[who.quota_key];
  if (counts.sessions + 1 > limits_.max_identity_sessions) {
    return absl::ResourceExhaustedError(absl::StrCat("this client already has ", counts.sessions,
                                                     " sessions open, the limit: close one"));
  }
  if (static_cast<int64_t>(sessions_.size()) + 1 > limits_.max_sessions) {
    return absl::ResourceExhaustedError(absl::StrCat("the server already has ", sessions_.size(),
                                                     " sessions open, the limit: try later"));
  }
  std::string id = absl::StrCat("sess-", RandomHex128());
  counts.sessions += 1;
  sessions_[id] = SessionEntry{who.id, who.quota_key, {}, {}};
  return id;
}

absl::Status ResourceRegistry::CheckSessionLocked(const Identity& who,
                                                  const std::string& session) const {
  auto it = sessions_.find(session);
  if (it == sessions_.end() || it->second.owner != who.id) {
    return absl::NotFoundError(absl::StrCat("no open session '", session,
                                            "' for this client (it ended, or is not yours)"));
  }
  return absl::OkStatus();
}

absl::Status ResourceRegistry::CheckSession(const Identity& who, const std::string& session) const {
  absl::MutexLock lock(&mu_);
  return CheckSessionLocked(who, session);
}

int ResourceRegistry::EndSession(const std::string& session) {
  std::vector<BufferView> buffers;  // destroyed after the lock: they may free memory
  std::vector<std::shared_ptr<ExecutionPlan>> plans;
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return 0;
  SessionEntry ended = std::move(it->second);
  sessions_.erase(it);
  Counts& counts = counts_[ended.quota_key];
  counts.sessions -= 1;
  // As FreeBuffer and ReleasePlan would: memory a plan of another session (or of none) still
  // holds stays, charged, until that plan goes.
  for (const std::string& id : ended.plans) {
    auto plan = plans_.find(id);
    if (plan == plans_.end()) continue;
    counts_[plan->second.quota_key].plans -= 1;
    plans.push_back(std::move(plan->second.plan));
    plans_.erase(plan);
  }
  for (const std::string& handle : ended.buffers) {
    auto buffer = buffers_.find(handle);
    if (buffer == buffers_.end()) continue;
    counts_[buffer->second.quota_key].buffers -= 1;
    buffers.push_back(std::move(buffer->second.view));
    buffers_.erase(buffer);
  }
  const int freed = static_cast<int>(buffers.size() + plans.size());
  sessions_ended_ += 1;
  session_freed_ += freed;
  return freed;
}

void ResourceRegistry::ForgetInSession(const BufferEntry& entry, const std::string& handle) {
  if (entry.session.empty()) return;
  if (auto it = sessions_.find(entry.session); it != sessions_.end()) {
    it->second.buffers.erase(handle);
  }
}

void ResourceRegistry::ForgetInSession(const PlanEntry& entry, const std::string& id) {
  if (entry.session.empty()) return;
  if (auto it = sessions_.find(entry.session); it != sessions_.end()) it->second.plans.erase(id);
}

absl::StatusOr<std::string> ResourceRegistry::AddBuffer(const Identity& who, BufferView view,
                                                        const std::string& session) {
  absl::MutexLock lock(&mu_);
  // Checked under the lock that adds: a session that ends meanwhile cannot miss the buffer.
  if (!session.empty()) UOPD_RETURN_IF_ERROR(CheckSessionLocked(who, session));
  Counts& counts = counts_[who.quota_key];
  if (counts.buffers + 1 > limits_.max_identity_buffers) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client already holds ", counts.buffers, " buffers, the limit"));
  }
  std::string handle = absl::StrCat("buf-", RandomHex128());
  counts.buffers += 1;
  buffers_[handle] = BufferEntry{who.id, who.quota_key, std::move(view), absl::Now(), session};
  if (!session.empty()) sessions_[session].buffers.insert(handle);
  return handle;
}

absl::StatusOr<BufferView> ResourceRegistry::GetBuffer(const Identity& who,
                                                       const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = buffers_.find(handle);
  if (it == buffers_.end() || it->second.owner != who.id) return NotFound("buffer", handle);
  it->second.last_used = absl::Now();
  return it->second.view;
}

absl::Status ResourceRegistry::FreeBuffer(const Identity& who, const std::string& handle) {
  BufferView released;  // destroyed after the lock: it may free the memory
  absl::MutexLock lock(&mu_);
  auto it = buffers_.find(handle);
  if (it == buffers_.end() || it->second.owner != who.id) return NotFound("buffer", handle);
  counts_[it->second.quota_key].buffers -= 1;
  ForgetInSession(it->second, handle);
  released = std::move(it->second.view);
  buffers_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResourceRegistry::AddPlan(const Identity& who,
                                                      std::shared_ptr<ExecutionPlan> plan,
                                                      std::vector<std::string> handles,
                                                      const std::string& session) {
  // The plan's bookkeeping is memory its owner keeps, as its buffers are.
  UOPD_ASSIGN_OR_RETURN(std::shared_ptr<const void> charge,
                        Charge(who, plan == nullptr ? 0 : plan->BookkeepingBytes()));
  absl::MutexLock lock(&mu_);
  if (!session.empty()) UOPD_RETURN_IF_ERROR(CheckSessionLocked(who, session));
  Counts& counts = counts_[who.quota_key];
  if (counts.plans + 1 > limits_.max_identity_plans) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client already holds ", counts.plans, " plans, the limit"));
  }
  std::string id = absl::StrCat("plan-", RandomHex128());
  counts.plans += 1;
  plans_[id] = PlanEntry{who.id,      who.quota_key, std::move(plan),  std::move(handles),
                         absl::Now(), session,       std::move(charge)};
  if (!session.empty()) sessions_[session].plans.insert(id);
  return id;
}

absl::StatusOr<std::shared_ptr<ExecutionPlan>> ResourceRegistry::GetPlan(const Identity& who,
                                                                         const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(id);
  if (it == plans_.end() || it->second.owner != who.id) return NotFound("plan", id);
  const absl::Time now = absl::Now();
  it->second.last_used = now;
  // The plan reads and writes its buffers: their handles are in use too.
  for (const std::string& handle : it->second.handles) {
    if (auto buffer = buffers_.find(handle); buffer != buffers_.end()) {
      buffer->second.last_used = now;
    }
  }
  return it->second.plan;
}

absl::Status ResourceRegistry::ReleasePlan(const Identity& who, const std::string& id) {
  std::shared_ptr<ExecutionPlan> released;  // destroyed after the lock
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(id);
  if (it == plans_.end() || it->second.owner != who.id) return NotFound("plan", id);
  counts_[it->second.quota_key].plans -= 1;
  ForgetInSession(it->second, id);
  released = std::move(it->second.plan);
  plans_.erase(it);
  return absl::OkStatus();
}

int ResourceRegistry::ReapIdle(absl::Time now) {
  std::vector<BufferView> buffers;  // destroyed after the lock
  std::vector<std::shared_ptr<ExecutionPlan>> plans;
  absl::MutexLock lock(&mu_);
  for (auto it = buffers_.begin(); it != buffers_.end();) {
    if (now - it->second.last_used > limits_.idle_ttl) {
      counts_[it->second.quota_key].buffers -= 1;
      ForgetInSession(it->second, it->first);
      buffers.push_back(std::move(it->second.view));
      buffers_.erase(it++);
    } else {
      ++it;
    }
  }
  for (auto it = plans_.begin(); it != plans_.end();) {
    if (now - it->second.last_used > limits_.idle_ttl) {
      counts_[it->second.quota_key].plans -= 1;
      ForgetInSession(it->second, it->first);
      plans.push_back(std::move(it->second.plan));
      plans_.erase(it++);
    } else {
      ++it;
    }
  }
  const int reaped = static_cast<int>(buffers.size() + plans.size());
  reclaimed_ += reaped;
  return reaped;
}

RegistryStats ResourceRegistry::stats() const {
  RegistryStats stats;
  {
    absl::MutexLock lock(&mu_);
    stats.buffers = static_cast<int64_t>(buffers_.size());
    for (const auto& [handle, entry] : buffers_) {
      stats.buffer_bytes += static_cast<int64_t>(entry.view.bytes());
    }
    stats.plans = static_cast<int64_t>(plans_.size());
    stats.reclaimed = reclaimed_;
    stats.sessions = static_cast<int64_t>(sessions_.size());
    stats.sessions_ended = sessions_ended_;
    stats.session_freed = session_freed_;
  }
  absl::MutexLock lock(&ledger_->mu);
  stats.charged_bytes = ledger_->total;
  return stats;
}

int64_t ResourceRegistry::ChargedBytes(const std::string& quota_key) const {
  absl::MutexLock lock(&ledger_->mu);
  auto it = ledger_->charged.find(quota_key);
  return it == ledger_->charged.end() ? 0 : it->second;
}

}  // namespace uopd
