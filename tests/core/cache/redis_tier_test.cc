// The Redis tier against a real redis-server on a loopback port: signed entries, what happens
// to entries someone else wrote, and Redis down, slow, full or restarting.
#include "core/cache/redis_tier.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/cache/entry_signature.h"
#include "core/cache/kernel_cache.h"
#include "core/cache/memory_tier.h"
#include "core/cache/program_codec.h"
#include "gtest/gtest.h"
#include "tests/testing/cache_entries.h"
#include "tests/testing/redis_process.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

const std::string kClusterKey(32, 'k');

RedisTierOptions OptionsFor(const std::string& url, const std::string& cluster_key = kClusterKey) {
  RedisTierOptions options;
  auto address = ParseRedisUrl(url);
  EXPECT_TRUE(address.ok()) << address.status();
  if (address.ok()) options.address = *address;
  options.cluster_key = cluster_key;
  options.prefix = "test:";
  options.connect_timeout = absl::Milliseconds(200);
  options.command_timeout = absl::Milliseconds(300);
  options.breaker_open = absl::Milliseconds(300);
  return options;
}

std::string Key(char c) { return std::string(64, c); }

// The value, "<miss>", or "<error>".
std::string GetValue(RedisTier& tier, const std::string& key) {
  auto value = tier.Get(key);
  if (!value.ok()) return "<error>";
  return value->value_or("<miss>");
}

TEST(RedisUrl, ParsesEveryPart) {
  auto a = ParseRedisUrl("redis://user:p%40ss@cache.internal:6380/3");
  UOPD_ASSERT_OK(a);
  EXPECT_EQ(a->user, "user");
  EXPECT_EQ(a->password, "p@ss");
  EXPECT_EQ(a->host, "cache.internal");
  EXPECT_EQ(a->port, 6380);
  EXPECT_EQ(a->db, 3);
  auto b = ParseRedisUrl("redis://localhost");
  UOPD_ASSERT_OK(b);
  EXPECT_EQ(b->port, 6379);
  EXPECT_EQ(b->db, 0);
  EXPECT_TRUE(b->password.empty());
  auto c = ParseRedisUrl("redis://:secret@[::1]:7000/");
  UOPD_ASSERT_OK(c);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->port, 7000);
  EXPECT_EQ(c->password, "secret");
  EXPECT_TRUE(c->user.empty());
}

TEST(RedisUrl, NamesWhatIsWrong) {
  using testing::StatusIs;
  EXPECT_TRUE(
      StatusIs(ParseRedisUrl("http://x"), absl::StatusCode::kInvalidArgument, {"redis://"}));
  EXPECT_TRUE(StatusIs(ParseRedisUrl("rediss://x"), absl::StatusCode::kInvalidArgument, {"TLS"}));
  EXPECT_TRUE(
      StatusIs(ParseRedisUrl("redis://x:0"), absl::StatusCode::kInvalidArgument, {"port '0'"}));
  EXPECT_TRUE(
      StatusIs(ParseRedisUrl("redis://x:99999"), absl::StatusCode::kInvalidArgument, {"port"}));
  EXPECT_TRUE(StatusIs(ParseRedisUrl("redis://x/db"), absl::StatusCode::kInvalidArgument,
                       {"database 'db'"}));
  EXPECT_TRUE(
      StatusIs(ParseRedisUrl("redis://:6379"), absl::StatusCode::kInvalidArgument, {"no host"}));
  EXPECT_TRUE(StatusIs(ParseRedisUrl("redis://u:%zz@x"), absl::StatusCode::kInvalidArgument,
                       {"password", "escape"}));
}

TEST(RedisTier, PublishesInTheBackgroundAndReadsBack) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  ASSERT_TRUE(redis.running());
  RedisTier tier(OptionsFor(redis.url()));
  EXPECT_EQ(GetValue(tier, Key('a')), "<miss>");
  UOPD_ASSERT_OK(tier.Put(Key('a'), "alpha"));
  std::string big(5 << 20, 'x');  // CUDA entries (PTX + CUBIN) run to megabytes
  UOPD_ASSERT_OK(tier.Put(Key('b'), big));
  ASSERT_TRUE(tier.Flush(absl::Seconds(10)));
  EXPECT_EQ(GetValue(tier, Key('a')), "alpha");
  EXPECT_EQ(GetValue(tier, Key('b')), big);
  // Presence, as FindMissing asks it, reads the entry's first bytes only.
  EXPECT_TRUE(tier.Contains(Key('b')));
  EXPECT_FALSE(tier.Contains(Key('z')));
  redis.Command({"SET", "test:" + Key('j'), "junk"});
  EXPECT_FALSE(tier.Contains(Key('j')));
  TierStats s = tier.stats();
  EXPECT_EQ(s.published, 2);
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.misses, 1);
  EXPECT_GT(s.written_bytes, 5 << 20);
  EXPECT_GT(s.read_bytes, 5 << 20);
  EXPECT_FALSE(s.breaker_open);
  // The key carries the prefix and expires (TTL).
  EXPECT_EQ(redis.Command({"EXISTS", "test:" + Key('a')}), "1");
  int64_t ttl = std::stoll(redis.Command({"PTTL", "test:" + Key('a')}).value_or("-9"));
  EXPECT_GT(ttl, 0);
  UOPD_ASSERT_OK(tier.Erase(Key('a')));
  ASSERT_TRUE(tier.Flush(absl::Seconds(10)));
  EXPECT_EQ(redis.Command({"EXISTS", "test:" + Key('a')}), "0");
}

TEST(RedisTier, PrefixesKeepClustersApart) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  RedisTierOptions a_options = OptionsFor(redis.url());
  a_options.prefix = "cluster-a:";
  RedisTierOptions b_options = OptionsFor(redis.url());
  b_options.prefix = "cluster-b:";
  RedisTier a(a_options), b(b_options);
  UOPD_ASSERT_OK(a.Put(Key('a'), "alpha"));
  ASSERT_TRUE(a.Flush(absl::Seconds(10)));
  EXPECT_EQ(GetValue(b, Key('a')), "<miss>");
  EXPECT_EQ(GetValue(a, Key('a')), "alpha");
}

TEST(RedisTier, RejectsEntriesNotSignedWithTheClusterKey) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  RedisTier tier(OptionsFor(redis.url()));
  UOPD_ASSERT_OK(tier.Put(Key('a'), "genuine code"));
  ASSERT_TRUE(tier.Flush(absl::Seconds(10)));
  std::string stored = redis.Command({"GET", "test:" + Key('a')}).value_or("");
  ASSERT_FALSE(stored.empty());

  // Tampered: one byte of the entry changed.
  std::string tampered = stored;
  tampered.back() ^= 1;
  redis.Command({"SET", "test:" + Key('t'), tampered});
  // Unsigned: the bare entry, as a writer without the key would put it.
  redis.Command({"SET", "test:" + Key('u'), "genuine code"});
  // Signed with another cluster's key.
  {
    RedisTier other(OptionsFor(redis.url(), std::string(32, 'o')));
    UOPD_ASSERT_OK(other.Put(Key('o'), "other cluster's code"));
    ASSERT_TRUE(other.Flush(absl::Seconds(10)));
  }
  // A genuine entry copied under another kernel's key.
  redis.Command({"SET", "test:" + Key('c'), stored});
  // Truncated below the signature.
  redis.Command({"SET", "test:" + Key('s'), stored.substr(0, 10)});

  for (char c : {'t', 'u', 'o', 'c', 's'}) {
    auto value = tier.Get(Key(c));
    UOPD_ASSERT_OK(value);
    EXPECT_FALSE(value->has_value()) << "entry " << c << " must never be used";
  }
  EXPECT_EQ(tier.stats().rejected, 5);
  EXPECT_EQ(tier.stats().hits, 0);
  EXPECT_EQ(GetValue(tier, Key('a')), "genuine code");
}

// A value no worker wrote, larger than any entry a worker publishes, costs a lookup the bound,
// not its own size (an 80 MiB junk value took ~3x its size in memory per lookup).
TEST(RedisTier, ReadsNoMoreThanTheLargestValueItWouldPublish) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  RedisTierOptions options = OptionsFor(redis.url());
  options.max_value_bytes = 1000;
  RedisTier tier(options);
  redis.Command({"SET", "test:" + Key('j'), std::string(100'000, 'j')});
  auto junk = tier.Get(Key('j'));
  UOPD_ASSERT_OK(junk);
  EXPECT_FALSE(junk->has_value());
  EXPECT_EQ(tier.stats().rejected, 1);
  EXPECT_LE(tier.stats().read_bytes, 1001);

  UOPD_ASSERT_OK(tier.Put(Key('b'), std::string(2000, 'b')));  // too large: not published
  UOPD_ASSERT_OK(tier.Put(Key('a'), "genuine code"));
  ASSERT_TRUE(tier.Flush(absl::Seconds(10)));
  EXPECT_EQ(redis.Command({"EXISTS", "test:" + Key('b')}), "0");
  EXPECT_EQ(GetValue(tier, Key('a')), "genuine code");
  EXPECT_EQ(GetValue(tier, Key('m')), "<miss>");  // a missing key is a miss, not a rejection
  EXPECT_EQ(tier.stats().rejected, 1);
}

TEST(RedisTier, ABadEntryIsCompiledLocallyAndReplaced) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  const CacheKey key{"CPU", "x86_64;cpu;+f", "llvm", "r", "ast"};
  redis.Command({"SET", "test:" + key.Hex(), "UOPDSIG1 forged entry with a bad signature...."});
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  tiers.push_back(std::make_unique<RedisTier>(OptionsFor(redis.url())));
  auto* shared = static_cast<RedisTier*>(tiers.back().get());
  KernelCache cache(std::move(tiers));
  int compiles = 0;
  auto compile = [&]() -> absl::StatusOr<CacheEntry> {
    ++compiles;
    return testing::EntryOf(key, "local");
  };
  auto result = cache.GetOrCompile(key, compile);
  UOPD_ASSERT_OK(result);
  EXPECT_EQ(result->answered_by, "compiled");
  EXPECT_EQ(result->entry->kernel.bytes, "local");
  EXPECT_EQ(shared->stats().rejected, 1);
  ASSERT_TRUE(shared->Flush(absl::Seconds(10)));
  // The local compile's signed entry replaced the forged one.
  auto replaced = shared->Get(key.Hex());
  UOPD_ASSERT_OK(replaced);
  ASSERT_TRUE(replaced->has_value());
  EXPECT_EQ(compiles, 1);
}

TEST(RedisTier, ASignedEntryNamingAnotherKernelIsDroppedByTheCache) {
  // Defence in depth under the signature: a worker holding the key that published the wrong
  // entry (a bug) still cannot make another kernel's code run.
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  const CacheKey key{"CPU", "t", "llvm", "r", "ast-1"};
  const CacheKey other{"CPU", "t", "llvm", "r", "ast-2"};
  {
    RedisTier writer(OptionsFor(redis.url()));
    const CacheEntry wrong = testing::EntryOf(other, "other kernel");
    UOPD_ASSERT_OK(writer.Put(key.Hex(), SerializeCacheEntry(wrong)));
    ASSERT_TRUE(writer.Flush(absl::Seconds(10)));
  }
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<RedisTier>(OptionsFor(redis.url())));
  KernelCache cache(std::move(tiers));
  auto result = cache.GetOrCompile(
      key, [&]() -> absl::StatusOr<CacheEntry> { return testing::EntryOf(key, "right"); });
  UOPD_ASSERT_OK(result);
  EXPECT_EQ(result->answered_by, "compiled");
  EXPECT_EQ(result->entry->kernel.bytes, "right");
  EXPECT_EQ(cache.tiers()[0]->stats().corrupt, 1);
}

TEST(RedisTier, SharesEntriesBetweenCachesWithoutCompiling) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  const CacheKey key{"CUDA", "sm_90", "nvrtc", "r", "ast"};
  auto make = [&](const std::string& binary) {
    return [&, binary]() -> absl::StatusOr<CacheEntry> { return testing::EntryOf(key, binary); };
  };
  auto worker = [&]() {
    std::vector<std::unique_ptr<CacheTier>> tiers;
    tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
    tiers.push_back(std::make_unique<RedisTier>(OptionsFor(redis.url())));
    return std::make_unique<KernelCache>(std::move(tiers));
  };
  auto a = worker();
  auto first = a->GetOrCompile(key, make("from a"));
  UOPD_ASSERT_OK(first);
  ASSERT_TRUE(static_cast<RedisTier*>(a->tiers()[1].get())->Flush(absl::Seconds(10)));
  auto b = worker();
  auto second = b->GetOrCompile(key, [&]() -> absl::StatusOr<CacheEntry> {
    ADD_FAILURE() << "worker b compiled what worker a published";
    return absl::InternalError("compiled");
  });
  UOPD_ASSERT_OK(second);
  EXPECT_EQ(second->answered_by, "redis");
  EXPECT_EQ(second->entry->kernel.bytes, "from a");
  // Written through to b's memory tier: the next lookup does not leave the process.
  auto third = b->GetOrCompile(key, make("unused"));
  UOPD_ASSERT_OK(third);
  EXPECT_EQ(third->answered_by, "memory");
  // Another target is another key: sm_90's entry never answers sm_80.
  const CacheKey sm80{"CUDA", "sm_80", "nvrtc", "r", "ast"};
  auto other = b->GetOrCompile(
      sm80, [&]() -> absl::StatusOr<CacheEntry> { return testing::EntryOf(sm80, "sm_80 code"); });
  UOPD_ASSERT_OK(other);
  EXPECT_EQ(other->answered_by, "compiled");
}

TEST(RedisTier, RedisDownCostsABoundedTimeAndTheBreakerStopsAsking) {
  UOPD_REQUIRE_REDIS();
  const int port = testing::FreeLoopbackPort();  // nothing listens here
  RedisTierOptions options = OptionsFor(absl::StrCat("redis://127.0.0.1:", port));
  options.breaker_open = absl::Seconds(30);
  RedisTier tier(options);
  for (int i = 0; i < options.breaker_failures; ++i) {
    EXPECT_TRUE(testing::StatusIs(tier.Get(Key('a')), absl::StatusCode::kUnavailable));
  }
  EXPECT_TRUE(tier.stats().breaker_open);
  EXPECT_EQ(tier.stats().breaker_trips, 1);
  const absl::Time start = absl::Now();
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(
        testing::StatusIs(tier.Get(Key('a')), absl::StatusCode::kUnavailable, {"circuit breaker"}));
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "an open breaker must not touch the network";
  // Publications wait for Redis; they do not block the caller.
  const absl::Time put_start = absl::Now();
  UOPD_ASSERT_OK(tier.Put(Key('a'), "alpha"));
  EXPECT_LT(absl::Now() - put_start, absl::Milliseconds(100));
  EXPECT_GT(tier.stats().publish_queue_bytes, 0);
}

TEST(RedisTier, SlowRedisIsCutOffByTheCommandTimeout) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  RedisTierOptions options = OptionsFor(redis.url());
  options.command_timeout = absl::Milliseconds(200);
  RedisTier tier(options);
  std::thread sleeper([&] { redis.Command({"DEBUG", "SLEEP", "2"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const absl::Time start = absl::Now();
  EXPECT_TRUE(testing::StatusIs(tier.Get(Key('a')), absl::StatusCode::kUnavailable));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(900));
  sleeper.join();
  EXPECT_EQ(tier.stats().errors, 1);
  // Redis answers again: the next lookup works on a new connection.
  UOPD_ASSERT_OK(tier.Get(Key('a')));
}

TEST(RedisTier, PublishingResumesWhenRedisComesBack) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis;
  RedisTier tier(OptionsFor(redis.url()));
  UOPD_ASSERT_OK(tier.Put(Key('a'), "before"));
  ASSERT_TRUE(tier.Flush(absl::Seconds(10)));
  redis.Kill();
  UOPD_ASSERT_OK(tier.Put(Key('b'), "while away"));
  EXPECT_FALSE(tier.Flush(absl::Milliseconds(700)));
  EXPECT_FALSE(tier.Get(Key('a')).ok());
  ASSERT_TRUE(redis.Start());  // empty: no persistence
  ASSERT_TRUE(tier.Flush(absl::Seconds(10))) << "queued publication never reached Redis";
  EXPECT_EQ(GetValue(tier, Key('b')), "while away");
  EXPECT_FALSE(tier.stats().breaker_open);
  EXPECT_GE(tier.stats().breaker_trips, 1);
}

TEST(RedisTier, AFullRedisRefusesAndNothingBreaks) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
  RedisTier tier(OptionsFor(redis.url()));
  UOPD_ASSERT_OK(tier.Put(Key('b'), "small"));
  UOPD_ASSERT_OK(tier.Put(Key('a'), std::string(4 << 20, 'x')));
  ASSERT_TRUE(tier.Flush(absl::Seconds(10)));
  TierStats s = tier.stats();
  EXPECT_EQ(s.publish_failed, 1) << "OOM: the big entry is refused";
  EXPECT_EQ(s.published, 1);
  EXPECT_FALSE(s.breaker_open) << "an answer from Redis is not an outage";
  EXPECT_EQ(GetValue(tier, Key('b')), "small");
}

TEST(RedisTier, AuthenticatesAndReportsAWrongPassword) {
  UOPD_REQUIRE_REDIS();
  testing::RedisProcess redis({}, "s3cret");
  RedisTier tier(OptionsFor(redis.url()));
  UOPD_ASSERT_OK(tier.Put(Key('a'), "alpha"));
  ASSERT_TRUE(tier.Flush(absl::Seconds(10)));
  EXPECT_EQ(GetValue(tier, Key('a')), "alpha");
  RedisTier wrong(OptionsFor(absl::StrCat("redis://:nope@127.0.0.1:", redis.port())));
  auto value = wrong.Get(Key('a'));
  EXPECT_TRUE(testing::StatusIs(value, absl::StatusCode::kUnavailable, {"AUTH"})) << value.status();
}

TEST(RedisTier, BoundsTheQueueAndDropsTheOldest) {
  const int port = testing::FreeLoopbackPort();
  RedisTierOptions options = OptionsFor(absl::StrCat("redis://127.0.0.1:", port));
  options.max_queued_bytes = 1000;
  RedisTier tier(options);
  for (int i = 0; i < 10; ++i) UOPD_ASSERT_OK(tier.Put(Key('a' + i), std::string(300, 'x')));
  TierStats s = tier.stats();
  EXPECT_LE(s.publish_queue_bytes, 1000);
  EXPECT_GE(s.publish_dropped, 7);
}

}  // namespace
}  // namespace uopd
