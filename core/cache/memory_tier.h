// MemoryTier: the in-process LRU tier, bounded by the bytes of its values.
#ifndef UOPD_CORE_CACHE_MEMORY_TIER_H_
#define UOPD_CORE_CACHE_MEMORY_TIER_H_

#include <list>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/cache/cache_tier.h"

namespace uopd {

// Safe for concurrent use.
class MemoryTier : public CacheTier {
 public:
  explicit MemoryTier(int64_t capacity_bytes) : capacity_(capacity_bytes) {}
  const char* name() const override { return "memory"; }
  // Only this process writes it.
  bool vouches_for_hits() const override { return true; }
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  bool Contains(const std::string& key) override;
  absl::Status Put(const std::string& key, const std::string& value) override;
  absl::Status Erase(const std::string& key) override;

 private:
  using Lru = std::list<std::pair<std::string, std::string>>;  // most recent first
  const int64_t capacity_;
  absl::Mutex mu_;
  Lru lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Lru::iterator> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_MEMORY_TIER_H_
