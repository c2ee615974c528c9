// KernelCache: the compiled-byte cache. Looks a key up tier by tier (memory, disk, then any
// remote tier), writes a lower tier's hit through to the tiers above it, and on a miss runs the
// compile function once however many requests wait for the same key (single flight). Failed
// compilations are returned to everyone waiting and not remembered.
//
// What reaches a shared tier is signed with the cluster key and run by every worker, so only
// what this daemon vouches for goes there: its own compiles, and hits of tiers whose
// vouches_for_hits() says every hit is authenticated (memory, the disk tier's MAC, Redis's
// signature). A hit of any other tier is used but neither written through nor published.
#ifndef UOPD_CORE_CACHE_KERNEL_CACHE_H_
#define UOPD_CORE_CACHE_KERNEL_CACHE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/cache/cache_entry.h"
#include "core/cache/cache_key.h"
#include "core/cache/cache_tier.h"
#include "core/device/stop_flag.h"

namespace uopd {

struct CacheLookup {
  std::shared_ptr<const CacheEntry> entry;
  std::string answered_by;  // a tier's name, or "compiled"
};

struct CompileStats {
  int64_t compilations = 0;
  double seconds = 0;
  int64_t failures = 0;
};

// Safe for concurrent use.
class KernelCache {
 public:
  // Tiers in lookup order, fastest first. With none, it still compiles each key once at a time
  // (and CachingProgramSource keeps what it loaded): what tools and tests without a cache use.
  explicit KernelCache(std::vector<std::unique_ptr<CacheTier>> tiers = {});

  using CompileFn = std::function<absl::StatusOr<CacheEntry>()>;
  // The entry for `key`, from a tier or from `compile` (run at most once at a time per key).
  // A caller waiting for another's compile stops waiting (CANCELLED) once its `stop` is set; if
  // the compiling caller's call ends instead, a waiting caller takes the compile over.
  absl::StatusOr<CacheLookup> GetOrCompile(const CacheKey& key, const CompileFn& compile,
                                           const StopFlag* stop = nullptr);

  // Raw access by key hex (for sharing entries between workers): the serialized entry
  // (program_codec.h) or nullopt, from the first tier that vouches for its hits and has it (what
  // CacheService.Get signs for peers). Put checks the bytes parse as an entry that names
  // `key_hex` (whoever calls it has checked where the entry comes from).
  std::optional<std::string> GetSerialized(const std::string& key_hex);
  // Whether GetSerialized would find `key_hex`, without copying the entry where a tier can tell.
  bool Contains(const std::string& key_hex);
  absl::Status PutSerialized(const std::string& key_hex, const std::string& value);

  // Drops the entry from every tier: it passed the tiers' checks but could not be used (its
  // bytes do not load, its metadata does not match its AST). The next lookup compiles anew.
  void Invalidate(const std::string& key_hex);

  const std::vector<std::unique_ptr<CacheTier>>& tiers() const { return tiers_; }
  // Compilation counts and seconds by base device key ("CPU", "CUDA").
  std::map<std::string, CompileStats> compile_stats() const;

 private:
  struct Flight {
    bool done = false;
    bool abandoned = false;  // its leader's call ended: whoever waits compiles anew
    absl::StatusOr<CacheLookup> result = absl::UnknownError("pending");
  };
  // Looks through the tiers; writes a hit through to the tiers above the one that answered.
  // An entry that does not name `key` and its AST hash is dropped from its tier and skipped.
  std::optional<CacheLookup> Lookup(const CacheKey& key, const std::string& key_hex);
  absl::StatusOr<CacheLookup> CompileAndStore(const CacheKey& key, const std::string& key_hex,
                                              const CompileFn& compile);

  std::vector<std::unique_ptr<CacheTier>> tiers_;  // constant after construction
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, CompileStats> compile_stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_KERNEL_CACHE_H_
