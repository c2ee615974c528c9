#include "core/session/resource_registry.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace uopd {
namespace {

absl::Status NotFound(absl::string_view kind, const std::string& handle) {
  return absl::NotFoundError(absl::StrCat("no ", kind, " '", handle, "' for this client"));
}

}  // namespace

std::string ResourceRegistry::NewHandle(absl::string_view prefix) {
  // Unguessable: knowing one handle says nothing about another.
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%s-%016x%016x", prefix, rng(), rng());
}

absl::Status ResourceRegistry::CheckBufferQuota(const std::string& owner, int64_t bytes) {
  if (bytes > limits_.max_buffer_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a buffer of ", bytes, " bytes exceeds the limit of ", limits_.max_buffer_bytes));
  }
  absl::MutexLock lock(&mu_);
  const OwnerUsage& usage = usage_[owner];
  if (usage.buffers + 1 > limits_.max_client_buffers) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client already holds ", usage.buffers, " buffers, the limit"));
  }
  if (usage.bytes + bytes > limits_.max_client_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client's buffers would take ", usage.bytes + bytes,
                     " bytes, over the limit of ", limits_.max_client_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResourceRegistry::AddBuffer(const std::string& owner, BufferView view) {
  if (absl::Status quota = CheckBufferQuota(owner, static_cast<int64_t>(view.bytes()));
      !quota.ok()) {
    return quota;
  }
  std::string handle = NewHandle("buf");
  absl::MutexLock lock(&mu_);
  OwnerUsage& usage = usage_[owner];
  usage.bytes += static_cast<int64_t>(view.bytes());
  usage.buffers += 1;
  buffers_[handle] = BufferEntry{owner, std::move(view), absl::Now()};
  return handle;
}

absl::StatusOr<BufferView> ResourceRegistry::GetBuffer(const std::string& owner,
                                                       const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = buffers_.find(handle);
  if (it == buffers_.end() || it->second.owner != owner) return NotFound("buffer", handle);
  it->second.last_used = absl::Now();
  return it->second.view;
}

absl::Status ResourceRegistry::FreeBuffer(const std::string& owner, const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = buffers_.find(handle);
  if (it == buffers_.end() || it->second.owner != owner) return NotFound("buffer", handle);
  OwnerUsage& usage = usage_[owner];
  usage.bytes -= static_cast<int64_t>(it->second.view.bytes());
  usage.buffers -= 1;
  buffers_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ResourceRegistry::AddPlan(const std::string& owner,
                                                      std::shared_ptr<ExecutionPlan> plan) {
  absl::MutexLock lock(&mu_);
  OwnerUsage& usage = usage_[owner];
  if (usage.plans + 1 > limits_.max_client_plans) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client already holds ", usage.plans, " plans, the limit"));
  }
  std::string id = NewHandle("plan");
  usage.plans += 1;
  plans_[id] = PlanEntry{owner, std::move(plan), absl::Now()};
  return id;
}

absl::StatusOr<std::shared_ptr<ExecutionPlan>> ResourceRegistry::GetPlan(const std::string& owner,
                                                                         const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(id);
  if (it == plans_.end() || it->second.owner != owner) return NotFound("plan", id);
  it->second.last_used = absl::Now();
  return it->second.plan;
}

absl::Status ResourceRegistry::ReleasePlan(const std::string& owner, const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(id);
  if (it == plans_.end() || it->second.owner != owner) return NotFound("plan", id);
  usage_[owner].plans -= 1;
  plans_.erase(it);
  return absl::OkStatus();
}

int ResourceRegistry::ReapIdle(absl::Time now) {
  int reaped = 0;
  absl::MutexLock lock(&mu_);
  for (auto it = buffers_.begin(); it != buffers_.end();) {
    if (now - it->second.last_used > limits_.idle_ttl) {
      OwnerUsage& usage = usage_[it->second.owner];
      usage.bytes -= static_cast<int64_t>(it->second.view.bytes());
      usage.buffers -= 1;
      buffers_.erase(it++);
      ++reaped;
    } else {
      ++it;
    }
  }
  for (auto it = plans_.begin(); it != plans_.end();) {
    if (now - it->second.last_used > limits_.idle_ttl) {
      usage_[it->second.owner].plans -= 1;
      plans_.erase(it++);
      ++reaped;
    } else {
      ++it;
    }
  }
  reclaimed_ += reaped;
  return reaped;
}

RegistryStats ResourceRegistry::stats() const {
  absl::MutexLock lock(&mu_);
  RegistryStats stats;
  stats.buffers = static_cast<int64_t>(buffers_.size());
  for (const auto& [handle, entry] : buffers_)
    stats.buffer_bytes += static_cast<int64_t>(entry.view.bytes());
  stats.plans = static_cast<int64_t>(plans_.size());
  stats.reclaimed = reclaimed_;
  return stats;
}

}  // namespace uopd
