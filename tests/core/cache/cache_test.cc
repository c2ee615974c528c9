// The compiled-byte cache: memory and disk tiers, keys, and single-flight compilation.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/cache/disk_tier.h"
#include "core/cache/kernel_cache.h"
#include "core/cache/memory_tier.h"
#include "core/cache/program_codec.h"
#include "gtest/gtest.h"
#include "tests/testing/cache_entries.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

std::string Key(char c) { return std::string(64, c); }

CacheKey SomeKey(const std::string& ast) {
  return CacheKey{"CPU", "x86_64;cpu;+f", "llvm", "r", ast};
}

TEST(CacheKey, ChangesWithEveryComponent) {
  const CacheKey base = SomeKey("a");
  EXPECT_EQ(base.Hex().size(), 64u);
  EXPECT_EQ(base.Hex(), SomeKey("a").Hex());
  for (CacheKey changed :
       {CacheKey{"CUDA", base.target, base.compiler, base.renderer, base.ast_hash},
        CacheKey{base.base_device, "sm_90", base.compiler, base.renderer, base.ast_hash},
        CacheKey{base.base_device, base.target, "llvm-20", base.renderer, base.ast_hash},
        CacheKey{base.base_device, base.target, base.compiler, "r2", base.ast_hash},
        SomeKey("b")}) {
    EXPECT_NE(changed.Hex(), base.Hex()) << changed.Describe();
  }
  // Framing: moving a character between components changes the key.
  EXPECT_NE((CacheKey{"CP", "Ux86_64;cpu;+f", "llvm", "r", "a"}).Hex(), base.Hex());
}

TEST(MemoryTier, EvictsLeastRecentlyUsedPastItsByteBound) {
  MemoryTier tier(3 * (64 + 100));
  for (char c : {'a', 'b', 'c'}) UOPD_ASSERT_OK(tier.Put(Key(c), std::string(100, c)));
  auto a = tier.Get(Key('a'));  // a is now the most recent
  UOPD_ASSERT_OK(a);
  ASSERT_TRUE(a->has_value());
  UOPD_ASSERT_OK(tier.Put(Key('d'), std::string(100, 'd')));
  EXPECT_FALSE(tier.Get(Key('b'))->has_value()) << "b was least recently used";
  EXPECT_TRUE(tier.Get(Key('a'))->has_value());
  EXPECT_TRUE(tier.Get(Key('d'))->has_value());
  EXPECT_EQ(tier.stats().evictions, 1);
  EXPECT_EQ(tier.stats().entries, 3);
}

TEST(DiskTier, StoresAcrossReopeningAndDropsDamagedEntries) {
  std::string dir = testing::TempDir("disk-tier");
  {
    auto tier = DiskTier::Open(dir, 1 << 20);
    UOPD_ASSERT_OK(tier);
    UOPD_ASSERT_OK((*tier)->Put(Key('a'), "alpha"));
    UOPD_ASSERT_OK((*tier)->Put(Key('b'), "beta"));
  }
  auto tier = DiskTier::Open(dir, 1 << 20);
  UOPD_ASSERT_OK(tier);
  (*tier)->TEST_WaitForMaintenance();
  EXPECT_EQ((*tier)->stats().entries, 2) << "the scan counts what survived the restart";
  auto a = (*tier)->Get(Key('a'));
  UOPD_ASSERT_OK(a);
  EXPECT_EQ(a->value_or(""), "alpha");
  // Truncate b: it must be a miss, counted as corrupt, and gone from disk.
  std::filesystem::resize_file((*tier)->PathOf(Key('b')), 20);
  auto b = (*tier)->Get(Key('b'));
  UOPD_ASSERT_OK(b);
  EXPECT_FALSE(b->has_value());
  EXPECT_EQ((*tier)->stats().corrupt, 1);
  EXPECT_FALSE(std::filesystem::exists((*tier)->PathOf(Key('b'))));
  EXPECT_TRUE(
      testing::StatusIs((*tier)->Get("../../etc/passwd"), absl::StatusCode::kInvalidArgument));
}

TEST(DiskTier, EvictsOldestEntriesInTheBackgroundPastItsBound) {
  std::string dir = testing::TempDir("disk-evict");
  auto tier = DiskTier::Open(dir, 4000);
  UOPD_ASSERT_OK(tier);
  (*tier)->TEST_WaitForMaintenance();
  const std::string value(900, 'x');
  for (char c : {'a', 'b', 'c'}) {
    UOPD_ASSERT_OK((*tier)->Put(Key(c), value));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct modification times
  }
  ASSERT_TRUE((*tier)->Get(Key('a'))->has_value());  // refreshes a: b is now the oldest
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (char c : {'d', 'e'}) UOPD_ASSERT_OK((*tier)->Put(Key(c), value));
  (*tier)->TEST_WaitForMaintenance();
  EXPECT_LE((*tier)->stats().bytes, 4000);
  EXPECT_GE((*tier)->stats().evictions, 1);
  EXPECT_FALSE(std::filesystem::exists((*tier)->PathOf(Key('b'))))
      << "least recently used goes first";
  EXPECT_TRUE(std::filesystem::exists((*tier)->PathOf(Key('a'))));
  EXPECT_TRUE(std::filesystem::exists((*tier)->PathOf(Key('e'))));
}

TEST(KernelCache, CompilesOnceForConcurrentRequestsAndWritesThrough) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  auto disk = DiskTier::Open(testing::TempDir("kernel-cache"), 1 << 20);
  UOPD_ASSERT_OK(disk);
  DiskTier* disk_tier = disk->get();
  tiers.push_back(std::move(*disk));
  KernelCache cache(std::move(tiers));
  std::atomic<int> compiles{0};
  auto slow = [&]() -> absl::StatusOr<CacheEntry> {
    compiles.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return testing::EntryOf(SomeKey("x"), "object");
  };
  std::vector<std::thread> threads;
  std::vector<std::string> answered(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto result = cache.GetOrCompile(SomeKey("x"), slow);
      answered[i] = result.ok() ? result->entry->kernel.bytes : result.status().ToString();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiles.load(), 1);
  for (const std::string& a : answered) EXPECT_EQ(a, "object");
  auto hit = cache.GetOrCompile(SomeKey("x"), slow);
  UOPD_ASSERT_OK(hit);
  EXPECT_EQ(hit->answered_by, "memory");
  EXPECT_TRUE(disk_tier->Get(SomeKey("x").Hex())->has_value()) << "stored in every tier";
  EXPECT_EQ(cache.compile_stats().at("CPU").compilations, 1);
}

TEST(KernelCache, DoesNotRememberFailures) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  KernelCache cache(std::move(tiers));
  int calls = 0;
  auto flaky = [&]() -> absl::StatusOr<CacheEntry> {
    if (++calls == 1) return absl::InternalError("first compile fails");
    return testing::EntryOf(SomeKey("y"), "ok");
  };
  EXPECT_TRUE(
      testing::StatusIs(cache.GetOrCompile(SomeKey("y"), flaky), absl::StatusCode::kInternal));
  auto second = cache.GetOrCompile(SomeKey("y"), flaky);
  UOPD_ASSERT_OK(second);
  EXPECT_EQ(second->answered_by, "compiled");
  EXPECT_EQ(calls, 2);
}

TEST(KernelCache, RefusesPutsThatAreNotEntries) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  KernelCache cache(std::move(tiers));
  EXPECT_TRUE(testing::StatusIs(cache.PutSerialized(Key('z'), std::string("\xff\xff\xff", 3)),
                                absl::StatusCode::kInvalidArgument));
  CacheEntry entry = testing::EntryOf(SomeKey("b"), "b");
  EXPECT_TRUE(testing::StatusIs(cache.PutSerialized(Key('z'), SerializeCacheEntry(entry)),
                                absl::StatusCode::kInvalidArgument, {"belongs under key"}));
  UOPD_EXPECT_OK(cache.PutSerialized(SomeKey("b").Hex(), SerializeCacheEntry(entry)));
  EXPECT_TRUE(cache.GetSerialized(SomeKey("b").Hex()).has_value());
}

TEST(KernelCache, AnEntryOfAnotherKeyOrAstIsDroppedAndCompiledAgain) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  CacheTier* memory = tiers.back().get();
  KernelCache cache(std::move(tiers));
  // Another key's entry stored under this one (as a copied file would be).
  UOPD_ASSERT_OK(
      memory->Put(SomeKey("p").Hex(), SerializeCacheEntry(testing::EntryOf(SomeKey("q"), "q"))));
  int compiles = 0;
  auto compile = [&]() -> absl::StatusOr<CacheEntry> {
    ++compiles;
    return testing::EntryOf(SomeKey("p"), "p");
  };
  auto result = cache.GetOrCompile(SomeKey("p"), compile);
  UOPD_ASSERT_OK(result);
  EXPECT_EQ(result->entry->kernel.bytes, "p");
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(memory->stats().corrupt, 1);
  // The right key, but another AST's hash.
  CacheEntry other_ast = testing::EntryOf(SomeKey("r"), "r");
  other_ast.ast_hash = "a different ast";
  UOPD_ASSERT_OK(memory->Put(SomeKey("r").Hex(), SerializeCacheEntry(other_ast)));
  auto second = cache.GetOrCompile(SomeKey("r"), [&]() -> absl::StatusOr<CacheEntry> {
    ++compiles;
    return testing::EntryOf(SomeKey("r"), "r");
  });
  UOPD_ASSERT_OK(second);
  EXPECT_EQ(second->answered_by, "compiled");
  EXPECT_EQ(compiles, 2);
}

// The metadata of a program with a symbolic launch size ((n + 3) / 4 blocks), two slots and a
// variable, as the Compile RPC would report it.
v1::ProgramMetadata SymbolicMetadata() {
  testing::GraphBuilder g;
  const int n = g.Var("n", 1, 64);
  const int sum = g.Node(v1::Node::ADD, v1::DType::INDEX, {n, g.Index(3)});
  g.Node(v1::Node::IDIV, v1::DType::INDEX, {sum, g.Index(4)});
  v1::ProgramMetadata m;
  m.set_name("k");
  m.set_device("CPU");
  *m.add_global_size()->mutable_expr() = g.graph();
  m.add_global_size()->set_constant(1);
  m.add_global_size()->set_constant(1);
  auto* var = m.add_vars();
  var->set_name("n");
  var->set_min(1);
  var->set_max(64);
  m.add_var_names("n");
  for (int slot : {0, 1}) {
    auto* global = m.add_globals();
    global->set_slot(slot);
    global->set_dtype(v1::DType::FLOAT32);
    global->set_size(64);
  }
  m.add_outs(0);
  m.add_ins(1);
  m.set_buf_count(2);
  return m;
}

TEST(CacheEntryCodec, KernelsAndSearchRecordsComeBackAsTheyWent) {
  auto spec = DecodeProgramMetadata(SymbolicMetadata());
  UOPD_ASSERT_OK(spec);
  CacheEntry kernel = testing::EntryOf(SomeKey("k"), "object");
  kernel.spec = *spec;
  kernel.spec.src = "define void @k()";
  kernel.kernel.ptx = "ptx";
  auto back = ParseCacheEntry(SerializeCacheEntry(kernel));
  UOPD_ASSERT_OK(back);
  EXPECT_FALSE(back->is_search_record());
  EXPECT_EQ(back->key, kernel.key);
  EXPECT_EQ(back->ast_hash, kernel.ast_hash);
  EXPECT_EQ(back->kernel.bytes, "object");
  EXPECT_EQ(back->kernel.ptx, "ptx");
  EXPECT_EQ(back->spec.src, "define void @k()");
  // What KernelCache's users compare an entry's program with: the same after a round trip,
  // symbolic launch size included, and different once anything it says differs.
  EXPECT_TRUE(SameProgramMetadata(back->spec, *spec));
  ASSERT_NE(back->spec.global_size[0].expr, nullptr);
  auto dims = back->spec.launch_dims({{"n", 9}});
  UOPD_ASSERT_OK(dims);
  EXPECT_EQ(dims->global[0], 3);
  ProgramSpec bigger = *spec;
  bigger.globals[0].size = 1000;
  EXPECT_FALSE(SameProgramMetadata(bigger, *spec));

  CacheEntry record;
  record.key = "r";
  record.ast_hash = "a";
  record.tuned_opts = {Opt{OptOp::kUpcast, 0, 4}};
  record.search = SearchSummary{1e-3, 2e-3, 7, 20, true};
  auto record_back = ParseCacheEntry(SerializeCacheEntry(record));
  UOPD_ASSERT_OK(record_back);
  EXPECT_TRUE(record_back->is_search_record());
  EXPECT_EQ(OptsToString(record_back->tuned_opts), OptsToString(record.tuned_opts));
  EXPECT_EQ(record_back->search.candidates, 7);
  EXPECT_TRUE(record_back->search.converged);
}

TEST(KernelCache, AnEntryWhoseProgramIsMalformedIsDroppedAndCompiledAgain) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  CacheTier* memory = tiers.back().get();
  KernelCache cache(std::move(tiers));
  // Well-formed protobuf naming the right key, but with two launch dimensions.
  v1::CachedKernel damaged;
  damaged.set_binary("bytes");
  damaged.set_key(SomeKey("m").Hex());
  damaged.set_ast_hash(SomeKey("m").ast_hash);
  damaged.mutable_metadata()->add_global_size()->set_constant(1);
  damaged.mutable_metadata()->add_global_size()->set_constant(1);
  UOPD_ASSERT_OK(memory->Put(SomeKey("m").Hex(), damaged.SerializeAsString()));
  EXPECT_TRUE(
      testing::StatusIs(cache.PutSerialized(SomeKey("m").Hex(), damaged.SerializeAsString()),
                        absl::StatusCode::kInvalidArgument, {"launch dimensions"}));
  auto result = cache.GetOrCompile(SomeKey("m"), [&]() -> absl::StatusOr<CacheEntry> {
    return testing::EntryOf(SomeKey("m"), "fresh");
  });
  UOPD_ASSERT_OK(result);
  EXPECT_EQ(result->answered_by, "compiled");
  EXPECT_EQ(result->entry->kernel.bytes, "fresh");
  EXPECT_EQ(memory->stats().corrupt, 1);
}

}  // namespace
}  // namespace uopd
