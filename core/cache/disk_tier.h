// DiskTier: content-addressed files under one directory, surviving restarts.
//
// Each entry is `<dir>/<key[0:2]>/<key>.uopd`: a magic line, an HMAC-SHA256 of the key and the
// payload (SignEntry, core/cache/entry_signature.h) under a secret the daemon holds, then the
// payload. Whoever can write the folder can write files, but not the MAC: an entry whose MAC
// does not check under any of the tier's secrets (replaced, damaged, truncated, written under
// another secret or by an older uopd without a MAC) is deleted, counted as corrupt, logged and
// reported as a miss, before anything of it is returned. The secret must therefore live outside the
// folder (server/main.cc: the cluster key, or a per-daemon file beside the folder).
//
// Nothing in the folder is followed: shard folders and entries are opened relative to the
// folder with O_NOFOLLOW, so a shard or an entry that is a symbolic link is an error or a
// dropped entry, never a read or a write outside it (the folder itself may be a link: the
// operator chose it).
//
// Writes go to a temporary name in the same shard and are renamed into place, so readers (other
// threads or processes) never see half an entry. The size bound is kept by a background thread
// that deletes least recently used entries (by modification time, which reads refresh); the
// initial scan runs there too, so start-up never waits for it.
#ifndef UOPD_CORE_CACHE_DISK_TIER_H_
#define UOPD_CORE_CACHE_DISK_TIER_H_

#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/cache/cache_tier.h"

namespace uopd {

// Safe for concurrent use, and for sharing one directory between processes that hold the same
// secret.
class DiskTier : public CacheTier {
 public:
  // The largest entry stored (Put refuses more): a compile worker's object is at most 64 MiB.
  // A larger file in the folder was not written by a daemon, and is dropped unread.
  static constexpr int64_t kMaxEntryBytes = int64_t{256} << 20;

  // Creates `dir` if needed. Entries are signed with `secrets[0]` and accepted when signed with
  // any of `secrets` (a worker given the cluster key keeps what it wrote under its own secret
  // before). INVALID_ARGUMENT without a secret or with an empty one; FAILED_PRECONDITION if
  // `dir` cannot be created or written.
  static absl::StatusOr<std::unique_ptr<DiskTier>> Open(std::string dir, int64_t capacity_bytes,
                                                        std::vector<std::string> secrets);
  ~DiskTier() override;

  const char* name() const override { return "disk"; }
  // Every hit passed its MAC under the daemon's secret.
  bool vouches_for_hits() const override { return true; }
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  bool Contains(const std::string& key) override;
  // Get and Put: FAILED_PRECONDITION when the entry's shard folder is not a folder (a symbolic
  // link), which Get's callers take as a miss and Put's as a failed write.
  absl::Status Put(const std::string& key, const std::string& value) override;
  absl::Status Erase(const std::string& key) override;

  // The file an entry lives in (for tests that damage entries on purpose).
  std::string PathOf(const std::string& key) const;
  // Blocks until the background scan and any eviction pass in progress are done.
  void TEST_WaitForMaintenance();

 private:
  class Fd;
  DiskTier(std::string dir, int64_t capacity_bytes, std::vector<std::string> secrets);
  // The shard folder `shard` of the directory, never through a link. NOT_FOUND when it does
  // not exist (and `create` is false), FAILED_PRECONDITION when it is not a folder.
  absl::StatusOr<Fd> OpenShard(const std::string& shard, bool create) const;
  // Deletes `name` in `shard` without following links; whether it was there, with its size.
  bool RemoveFile(const std::string& shard, const std::string& name, int64_t* size) const;
  // Drops an entry Get found unusable: deleted, counted corrupt, logged.
  void Drop(const std::string& key, absl::string_view why);
  bool Authentic(const std::string& key, absl::string_view payload, absl::string_view mac) const;
  void MaintenanceLoop();
  void Scan();
  void Evict();

  const std::string dir_;
  const int64_t capacity_;
  const std::vector<std::string> secrets_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool evict_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool idle_ ABSL_GUARDED_BY(mu_) = false;
  std::thread maintenance_;
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_DISK_TIER_H_
