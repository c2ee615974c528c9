// RedisTier: the compiled-byte cache tier a cluster shares, on Redis (hiredis). Every worker
// looks here after its own memory and disk tiers, and publishes what it compiles (and what its
// searches choose: search records are entries like any other) for the others.
//
// - Entries are code every worker runs, so whoever can write to Redis must not be able to
//   choose it: each value is signed with the cluster key (HMAC-SHA256 over the cache key and
//   the entry, core/cache/entry_signature.h) and checked on every read. A value that is not
//   signed, or signed with another key, or altered, is a miss: counted as rejected, logged once
//   per key, and the kernel is compiled locally (whose publication then replaces it). The cache
//   above checks that an entry names its key and AST hash (an entry copied under another key).
// - Redis never fails a request and adds a bounded time at most: connect and command
//   time-outs, and a circuit breaker that stops asking after consecutive failures for a while
//   (then lets one request try again). Publishing (Put, Erase) happens on a background thread
//   from a bounded queue, never on the request's path; what is queued while Redis is away is
//   published when it returns (oldest dropped past the bound, counted).
// - Keys are `prefix` + the cache key's hex: the cache key already holds the device, the
//   compile target, the compiler and renderer versions and the AST hash, so a CPU entry never
//   answers CUDA and sm_80 never answers sm_90; the prefix keeps clusters (or uopd versions)
//   apart on one Redis. Entries expire after `ttl` (refreshed when published again).
#ifndef UOPD_CORE_CACHE_REDIS_TIER_H_
#define UOPD_CORE_CACHE_REDIS_TIER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/cache/cache_tier.h"

struct redisContext;

namespace uopd {

// redis://[user:password@]host[:port][/db]
struct RedisAddress {
  std::string host;
  int port = 6379;
  std::string user;
  std::string password;
  int db = 0;
};

// INVALID_ARGUMENT naming the part of the URL that is wrong.
absl::StatusOr<RedisAddress> ParseRedisUrl(const std::string& url);

struct RedisTierOptions {
  RedisAddress address;
  std::string cluster_key;  // required: signs what is published, checks what is read
  std::string prefix = "uopd:";
  absl::Duration ttl = absl::Hours(24 * 7);  // zero: entries do not expire
  absl::Duration connect_timeout = absl::Milliseconds(250);
  absl::Duration command_timeout = absl::Seconds(1);
  int breaker_failures = 3;                         // consecutive failures that open it
  absl::Duration breaker_open = absl::Seconds(10);  // how long it stays open
  int64_t max_queued_bytes = int64_t{256} << 20;    // publications waiting for Redis
  // The largest value read or published. Entries past it are not published, so a longer value
  // was not written by a worker and is read no further than this (GETRANGE): a junk value in
  // the store costs a lookup this much memory, not its own size.
  int64_t max_value_bytes = int64_t{32} << 20;
  int max_idle_connections = 8;
};

class RedisTier : public CacheTier {
 public:
  // Does not connect: Redis may come later (lookups miss until it does).
  explicit RedisTier(RedisTierOptions options);
  ~RedisTier() override;

  const char* name() const override { return "redis"; }
  bool shared() const override { return true; }
  // Every hit carries the cluster key's signature.
  bool vouches_for_hits() const override { return true; }
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  bool Contains(const std::string& key) override;
  // Queued for the background publisher: returns at once.
  absl::Status Put(const std::string& key, const std::string& value) override;
  absl::Status Erase(const std::string& key) override;

  TierStats stats() const override;
  // Waits until the publish queue is empty or `timeout` passes; whether it emptied (tests,
  // shutdown).
  bool Flush(absl::Duration timeout);

 private:
  struct Publication {
    std::string key;
    std::string value;  // the signed value; empty with `erase`
    bool erase = false;
  };
  struct ContextDeleter {
    void operator()(redisContext* c) const;
  };
  using Connection = std::unique_ptr<redisContext, ContextDeleter>;

  // A connection (idle or new), or UNAVAILABLE when the breaker is open or Redis cannot be
  // reached.
  absl::StatusOr<Connection> Acquire();
  void Release(Connection connection);
  // Runs one command; the reply's string (nullopt for nil or a status/integer reply) or an
  // error: UNAVAILABLE when Redis could not be asked (breaker open, connection or I/O failure,
  // the connection is dropped and the breaker fed), FAILED_PRECONDITION for an error reply
  // (Redis answered: full, read-only, ...).
  absl::StatusOr<std::optional<std::string>> Command(const std::vector<std::string>& argv);
  absl::StatusOr<Connection> Connect();
  void Succeeded();
  void Failed(const std::string& why);
  bool BreakerAllows();
  void PublishLoop();
  void DropOldestPastBound() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RedisTierOptions options_;

  mutable absl::Mutex mu_;
  std::vector<Connection> idle_ ABSL_GUARDED_BY(mu_);
  int consecutive_failures_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time open_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool logged_open_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Publication> queue_ ABSL_GUARDED_BY(mu_);
  int64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool publishing_ ABSL_GUARDED_BY(mu_) = false;  // a publication is out of the queue
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<std::string> logged_rejections_ ABSL_GUARDED_BY(mu_);
  int64_t breaker_trips_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> rejected_{0}, read_bytes_{0}, written_bytes_{0}, published_{0},
      publish_failed_{0}, publish_dropped_{0};
  std::thread publisher_;
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_REDIS_TIER_H_
