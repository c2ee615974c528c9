// DiskTier: content-addressed files under one directory, surviving restarts.
//
// Each entry is `<dir>/<key[0:2]>/<key>.uopd`: a magic line, the SHA-256 of the payload, the
// payload. Writes go to a temporary name in the same folder and are renamed into place, so
// readers (other threads or processes) never see half an entry; every read checks the digest,
// and a damaged or truncated entry is deleted and reported as a miss. The size bound is kept
// by a background thread that deletes least recently used entries (by modification time, which
// reads refresh); the initial scan runs there too, so start-up never waits for it.
#ifndef UOPD_CORE_CACHE_DISK_TIER_H_
#define UOPD_CORE_CACHE_DISK_TIER_H_

#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/cache/cache_tier.h"

namespace uopd {

// Safe for concurrent use, and for sharing one directory between processes.
class DiskTier : public CacheTier {
 public:
  // Creates `dir` if needed. FAILED_PRECONDITION if it cannot be created or written.
  static absl::StatusOr<std::unique_ptr<DiskTier>> Open(std::string dir, int64_t capacity_bytes);
  ~DiskTier() override;

  const char* name() const override { return "disk"; }
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  absl::Status Put(const std::string& key, const std::string& value) override;
  absl::Status Erase(const std::string& key) override;

  // The file an entry lives in (for tests that damage entries on purpose).
  std::string PathOf(const std::string& key) const;
  // Blocks until the background scan and any eviction pass in progress are done.
  void TEST_WaitForMaintenance();

 private:
  DiskTier(std::string dir, int64_t capacity_bytes);
  void MaintenanceLoop();
  void Scan();
  void Evict();

  const std::string dir_;
  const int64_t capacity_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool evict_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool idle_ ABSL_GUARDED_BY(mu_) = false;
  std::thread maintenance_;
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_DISK_TIER_H_
