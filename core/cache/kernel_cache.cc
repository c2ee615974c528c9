#include "core/cache/kernel_cache.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/cache/program_codec.h"
#include "core/util/log.h"

namespace uopd {

KernelCache::KernelCache(std::vector<std::unique_ptr<CacheTier>> tiers)
    : tiers_(std::move(tiers)) {}

std::optional<CacheLookup> KernelCache::Lookup(const CacheKey& key, const std::string& key_hex) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    auto value = tiers_[i]->Get(key_hex);
    if (!value.ok()) {
      // An unreachable tier says so itself, once per outage, not once per lookup.
      Log(absl::IsUnavailable(value.status()) ? LogLevel::kDebug : LogLevel::kWarning,
          "cache tier failed", {{"tier", tiers_[i]->name()}, {"error", value.status().ToString()}});
      continue;
    }
    if (!value->has_value()) continue;
    absl::StatusOr<CacheEntry> entry = ParseCacheEntry(**value);
    const bool parses = entry.ok();
    if (!parses || entry->key != key_hex || entry->ast_hash != key.ast_hash) {
      // Passed the tier's own check, but is not this key's entry (damaged, or another key's
      // entry copied here): never used, dropped, and counted as corrupt.
      (void)tiers_[i]->Erase(key_hex);
      tiers_[i]->CountCorrupt();
      Log(LogLevel::kWarning,
          parses ? "cache entry belongs to another key or kernel: dropped"
                 : "cache entry does not parse: dropped",
          {{"tier", tiers_[i]->name()}, {"key", key_hex}});
      continue;
    }
    if (!tiers_[i]->vouches_for_hits()) {
      // Used for this lookup only: written into a tier that vouches for its hits, or published
      // (signed with the cluster key), it would come out as this daemon's own work.
      return CacheLookup{std::make_shared<const CacheEntry>(*std::move(entry)), tiers_[i]->name()};
    }
    for (size_t above = 0; above < i; ++above) {
      if (absl::Status s = tiers_[above]->Put(key_hex, **value); !s.ok()) {
        Log(LogLevel::kWarning, "cache write-through failed",
            {{"tier", tiers_[above]->name()}, {"error", s.ToString()}});
      }
    }
    // A vouched-for local hit also goes to the shared tiers below it: what this worker compiled
    // before it joined the cluster, or while the shared store was away, reaches the others at
    // its first use (and the store's TTL is refreshed). Memory hits do not repeat it.
    for (size_t below = i + 1; i > 0 && below < tiers_.size(); ++below) {
      if (tiers_[below]->shared()) (void)tiers_[below]->Put(key_hex, **value);
    }
    return CacheLookup{std::make_shared<const CacheEntry>(*std::move(entry)), tiers_[i]->name()};
  }
  return std::nullopt;
}

absl::StatusOr<CacheLookup> KernelCache::CompileAndStore(const CacheKey& key,
                                                         const std::string& key_hex,
                                                         const CompileFn& compile) {
  Log(LogLevel::kDebug, "cache miss", {{"key", key_hex}, {"components", key.Describe()}});
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CacheEntry> compiled = compile();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    absl::MutexLock lock(&mu_);
    CompileStats& stats = compile_stats_[key.base_device];
    ++stats.compilations;
    stats.seconds += seconds;
    if (!compiled.ok()) ++stats.failures;
  }
  if (!compiled.ok()) return compiled.status();
  const std::string serialized = SerializeCacheEntry(*compiled);
  for (const auto& tier : tiers_) {
    if (absl::Status s = tier->Put(key_hex, serialized); !s.ok()) {
      Log(LogLevel::kWarning, "cache write failed",
          {{"tier", tier->name()}, {"error", s.ToString()}});
    }
  }
  return CacheLookup{std::make_shared<const CacheEntry>(*std::move(compiled)), "compiled"};
}

absl::StatusOr<CacheLookup> KernelCache::GetOrCompile(const CacheKey& key, const CompileFn& compile,
                                                      const StopFlag* stop) {
  const std::string key_hex = key.Hex();
  while (true) {
    // Joining a flight before looking anything up means a key is looked up (and counted) once
    // per request, and a request never compiles what a finishing flight just stored.
    std::shared_ptr<Flight> flight;
    bool leader = false;
    {
      absl::MutexLock lock(&mu_);
      auto& slot = flights_[key_hex];
      if (slot == nullptr) {
        slot = std::make_shared<Flight>();
        leader = true;
      }
      flight = slot;
    }
    if (!leader) {
      absl::MutexLock lock(&mu_);
      // The stop flag is not under the mutex: look at it every few milliseconds.
      while (!mu_.AwaitWithTimeout(absl::Condition(&flight->done), absl::Milliseconds(5))) {
        if (stop != nullptr && stop->stopped()) {
          return absl::CancelledError("the call ended while waiting for a compile");
        }
      }
      if (flight->abandoned) continue;
      return flight->result;
    }
    absl::StatusOr<CacheLookup> result = [&]() -> absl::StatusOr<CacheLookup> {
      if (auto hit = Lookup(key, key_hex)) return *hit;
      return CompileAndStore(key, key_hex, compile);
    }();
    absl::MutexLock lock(&mu_);
    flight->result = result;
    flight->abandoned = !result.ok() && stop != nullptr && stop->stopped();
    flight->done = true;
    flights_.erase(key_hex);
    return result;
  }
}

std::optional<std::string> KernelCache::GetSerialized(const std::string& key_hex) {
  for (const auto& tier : tiers_) {
    if (!tier->vouches_for_hits()) continue;  // CacheService.Get signs what this returns
    auto value = tier->Get(key_hex);
    if (value.ok() && value->has_value()) return **value;
  }
  return std::nullopt;
}

bool KernelCache::Contains(const std::string& key_hex) {
  for (const auto& tier : tiers_) {
    if (tier->vouches_for_hits() && tier->Contains(key_hex)) return true;
  }
  return false;
}

absl::Status KernelCache::PutSerialized(const std::string& key_hex, const std::string& value) {
  absl::StatusOr<CacheEntry> probe = ParseCacheEntry(value);
  if (!probe.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value is not a cache entry: ", probe.status().message()));
  }
  if (probe->key != key_hex) {
    return absl::InvalidArgumentError(absl::StrCat("the entry belongs under key '",
                                                   probe->key.substr(0, 64), "', not ", key_hex));
  }
  for (const auto& tier : tiers_) {
    absl::Status s = tier->Put(key_hex, value);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void KernelCache::Invalidate(const std::string& key_hex) {
  for (const auto& tier : tiers_) (void)tier->Erase(key_hex);
}

std::map<std::string, CompileStats> KernelCache::compile_stats() const {
  absl::MutexLock lock(&mu_);
  return compile_stats_;
}

}  // namespace uopd
