// CacheTier: one level of the compiled-byte cache (memory, local disk, a shared remote store),
// storing opaque values under the 64-hex-digit names of CacheKey::Hex().
#ifndef UOPD_CORE_CACHE_CACHE_TIER_H_
#define UOPD_CORE_CACHE_CACHE_TIER_H_

#include <atomic>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace uopd {

struct TierStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t corrupt = 0;  // entries found damaged, dropped (and counted as misses)
  int64_t evictions = 0;
  int64_t puts = 0;
  int64_t errors = 0;  // failed reads or writes (the tier is skipped, not fatal)
  int64_t entries = 0;
  int64_t bytes = 0;
  // Shared tiers (zero for local ones).
  int64_t rejected = 0;  // entries with a missing or wrong signature: misses, never used
  int64_t read_bytes = 0;
  int64_t written_bytes = 0;
  int64_t published = 0;        // background publications done
  int64_t publish_failed = 0;   // refused by the store (full, read-only, ...)
  int64_t publish_dropped = 0;  // dropped because the queue was full
  int64_t publish_queue_bytes = 0;
  bool breaker_open = false;  // not asking the store for a while after failures
  int64_t breaker_trips = 0;
};

// Atomic counters behind TierStats, for implementations.
struct TierCounters {
  std::atomic<int64_t> hits{0}, misses{0}, corrupt{0}, evictions{0}, puts{0}, errors{0}, entries{0},
      bytes{0};
  TierStats Snapshot() const {
    return TierStats{hits.load(), misses.load(), corrupt.load(), evictions.load(),
                     puts.load(), errors.load(), entries.load(), bytes.load()};
  }
};

// Implementations are safe for concurrent use.
class CacheTier {
 public:
  virtual ~CacheTier() = default;
  virtual const char* name() const = 0;
  // Shared between workers (a remote store): its entries are signed, its writes in the
  // background, and it has the shared-tier figures of TierStats.
  virtual bool shared() const { return false; }
  // Whether every hit is known to be this daemon's own work or the cluster's: kept in this
  // process, or checked on read against a key the daemon holds (the disk tier's MAC, a shared
  // tier's signature). KernelCache passes on to shared tiers (signed with the cluster key) only
  // what it compiled and hits of tiers that vouch for them: publishing any other hit would turn
  // whoever can write that tier into a writer of every worker's code.
  virtual bool vouches_for_hits() const { return false; }
  // The value, nullopt on a miss (a damaged entry is a miss, and is removed). An error means the
  // tier could not answer; callers treat it as a miss.
  virtual absl::StatusOr<std::optional<std::string>> Get(const std::string& key) = 0;
  // Whether Get would find `key`, without copying its value where the tier can tell so.
  virtual bool Contains(const std::string& key) {
    absl::StatusOr<std::optional<std::string>> value = Get(key);
    return value.ok() && value->has_value();
  }
  virtual absl::Status Put(const std::string& key, const std::string& value) = 0;
  // Removes the entry if present (an entry found unusable after the tier's own checks).
  virtual absl::Status Erase(const std::string& key) = 0;
  virtual TierStats stats() const { return counters_.Snapshot(); }
  // Counts an entry found unusable above the tier (a miss, like a damaged one).
  void CountCorrupt() {
    counters_.corrupt.fetch_add(1);
    counters_.misses.fetch_add(1);
    counters_.hits.fetch_sub(1);
  }

 protected:
  TierCounters counters_;
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_CACHE_TIER_H_
