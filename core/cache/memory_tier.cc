#include "core/cache/memory_tier.h"

namespace uopd {

absl::StatusOr<std::optional<std::string>> MemoryTier::Get(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    counters_.misses.fetch_add(1);
    return std::optional<std::string>();
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  counters_.hits.fetch_add(1);
  return std::optional<std::string>(it->second->second);
}

bool MemoryTier::Contains(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return index_.contains(key);
}

absl::Status MemoryTier::Put(const std::string& key, const std::string& value) {
  const int64_t size = static_cast<int64_t>(key.size() + value.size());
  if (size > capacity_) return absl::OkStatus();  // would evict everything else: keep it out
  absl::MutexLock lock(&mu_);
  counters_.puts.fetch_add(1);
  if (auto it = index_.find(key); it != index_.end()) {
    counters_.bytes.fetch_sub(
        static_cast<int64_t>(it->second->first.size() + it->second->second.size()));
    lru_.erase(it->second);
    index_.erase(it);
    counters_.entries.fetch_sub(1);
  }
  lru_.emplace_front(key, value);
  index_[key] = lru_.begin();
  counters_.entries.fetch_add(1);
  counters_.bytes.fetch_add(size);
  while (counters_.bytes.load() > capacity_ && !lru_.empty()) {
    auto& victim = lru_.back();
    counters_.bytes.fetch_sub(static_cast<int64_t>(victim.first.size() + victim.second.size()));
    index_.erase(victim.first);
    lru_.pop_back();
    counters_.entries.fetch_sub(1);
    counters_.evictions.fetch_add(1);
  }
  return absl::OkStatus();
}

absl::Status MemoryTier::Erase(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return absl::OkStatus();
  counters_.bytes.fetch_sub(
      static_cast<int64_t>(it->second->first.size() + it->second->second.size()));
  lru_.erase(it->second);
  index_.erase(it);
  counters_.entries.fetch_sub(1);
  return absl::OkStatus();
}

}  // namespace uopd
