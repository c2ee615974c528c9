// The compiled-byte cache: memory and disk tiers, keys, and single-flight compilation.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "core/cache/disk_tier.h"
#include "core/cache/entry_signature.h"
#include "core/cache/kernel_cache.h"
#include "core/cache/memory_tier.h"
#include "core/cache/program_codec.h"
#include "core/util/sha256.h"
#include "gtest/gtest.h"
#include "tests/testing/cache_entries.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

std::string Key(char c) { return std::string(64, c); }

// The secret the disk tiers of these tests authenticate their entries with.
const std::vector<std::string> kSecret = {"disk-tier-test-secret-0123456789abcdef"};

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

TEST(CacheKey, AFloatModeIsPartOfTheKeyAndKeysWithoutOneStayAsTheyWere) {
  CacheKey fma = SomeKey("a");
  fma.float_mode = "fma";
  EXPECT_NE(fma.Hex(), SomeKey("a").Hex());
  EXPECT_NE(fma.Describe().find("float_mode=fma"), std::string::npos) << fma.Describe();
  CacheKey opts = SomeKey("a");
  opts.opts = "fma";  // the same text in another component is another key
  EXPECT_NE(opts.Hex(), fma.Hex());
  // A kernel whose operations all round keeps the key it had before float modes existed, so
  // caches filled by older workers stay warm through an upgrade.
  // (SHA-256 of the framed components, as uopd-cache-key-v2 always hashed them.)
  EXPECT_EQ(SomeKey("a").Hex(), "31313eec073f7645fa3adf7259db06737a455ca8fb677c809e3613c231539270");
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
    auto tier = DiskTier::Open(dir, 1 << 20, kSecret);
    UOPD_ASSERT_OK(tier);
    UOPD_ASSERT_OK((*tier)->Put(Key('a'), "alpha"));
    UOPD_ASSERT_OK((*tier)->Put(Key('b'), "beta"));
  }
  auto tier = DiskTier::Open(dir, 1 << 20, kSecret);
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
  // Presence, as FindMissing asks it, reads no entry.
  EXPECT_TRUE((*tier)->Contains(Key('a')));
  EXPECT_FALSE((*tier)->Contains(Key('b')));
  EXPECT_FALSE((*tier)->Contains(Key('z')));
  EXPECT_FALSE((*tier)->Contains("../../etc/passwd"));
}

// A file no daemon wrote, larger than any entry (planted by whoever can write the folder), is
// dropped without being read: read whole, it cost its size in memory per lookup.
TEST(DiskTier, AFileLargerThanAnyEntryIsDroppedUnread) {
  std::string dir = testing::TempDir("disk-tier-huge");
  auto tier = DiskTier::Open(dir, int64_t{1} << 40, kSecret);
  UOPD_ASSERT_OK(tier);
  UOPD_ASSERT_OK((*tier)->Put(Key('e'), "honest"));
  // Sparse: 1 GiB long, no disk used.
  std::filesystem::resize_file((*tier)->PathOf(Key('e')), uintmax_t{1} << 30);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  auto huge = (*tier)->Get(Key('e'));
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  UOPD_ASSERT_OK(huge);
  EXPECT_FALSE(huge->has_value());
  EXPECT_EQ((*tier)->stats().corrupt, 1);
  EXPECT_FALSE(std::filesystem::exists((*tier)->PathOf(Key('e'))));
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak memory for one lookup";
}

TEST(DiskTier, EvictsOldestEntriesInTheBackgroundPastItsBound) {
  std::string dir = testing::TempDir("disk-evict");
  auto tier = DiskTier::Open(dir, 4000, kSecret);
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

// What someone who can write the cache folder but not read the daemon's secret does to an
// entry: replaces its payload with another well-formed entry for the same key and AST and
// recomputes the digest in the header (`magic` + SHA-256 of the payload + payload).
void Forge(const std::string& path, const std::string& magic, const std::string& payload) {
  const Digest digest = Sha256Of(payload);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << magic << std::string(reinterpret_cast<const char*>(digest.data()), digest.size())
      << payload;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

TEST(DiskTier, AnEntryReplacedWithARecomputedDigestIsDroppedNotReturned) {
  const std::string dir = testing::TempDir("disk-forged");
  auto tier = DiskTier::Open(dir, 1 << 20, kSecret);
  UOPD_ASSERT_OK(tier);
  const CacheKey key = SomeKey("forged");
  const std::string honest = SerializeCacheEntry(testing::EntryOf(key, "honest object"));
  const std::string attacker = SerializeCacheEntry(testing::EntryOf(key, "attacker object"));
  // The header an older uopd wrote and the current magic with a digest where the MAC goes:
  // neither is something only the secret's holder can make.
  for (const std::string magic : {"UOPDK1\n", "UOPDK2\n"}) {
    UOPD_ASSERT_OK((*tier)->Put(key.Hex(), honest));
    Forge((*tier)->PathOf(key.Hex()), magic, attacker);
    auto got = (*tier)->Get(key.Hex());
    UOPD_ASSERT_OK(got);
    EXPECT_FALSE(got->has_value()) << magic << " returned: " << got->value_or("");
    EXPECT_FALSE(std::filesystem::exists((*tier)->PathOf(key.Hex()))) << "erased";
  }
  EXPECT_EQ((*tier)->stats().corrupt, 2);
  EXPECT_EQ((*tier)->stats().hits, 0);
  // A Put after the drop makes a good entry again.
  UOPD_ASSERT_OK((*tier)->Put(key.Hex(), honest));
  EXPECT_EQ((*tier)->Get(key.Hex())->value_or(""), honest);
}

TEST(DiskTier, EntriesWrittenUnderAnotherSecretAreMisses) {
  const std::string dir = testing::TempDir("disk-secrets");
  const std::vector<std::string> other = {"another-daemons-secret-0123456789abcdef"};
  {
    auto tier = DiskTier::Open(dir, 1 << 20, kSecret);
    UOPD_ASSERT_OK(tier);
    UOPD_ASSERT_OK((*tier)->Put(Key('a'), "alpha"));
    UOPD_ASSERT_OK((*tier)->Put(Key('b'), "beta"));
  }
  {
    auto tier = DiskTier::Open(dir, 1 << 20, other);
    UOPD_ASSERT_OK(tier);
    auto a = (*tier)->Get(Key('a'));
    UOPD_ASSERT_OK(a);
    EXPECT_FALSE(a->has_value());
    EXPECT_EQ((*tier)->stats().corrupt, 1);
    EXPECT_FALSE(std::filesystem::exists((*tier)->PathOf(Key('a'))));
  }
  // Signing with one secret and accepting another as well (a worker given the cluster key keeps
  // what it wrote under its own secret before).
  auto tier = DiskTier::Open(dir, 1 << 20, {other[0], kSecret[0]});
  UOPD_ASSERT_OK(tier);
  EXPECT_EQ((*tier)->Get(Key('b'))->value_or(""), "beta");
  UOPD_ASSERT_OK((*tier)->Put(Key('c'), "gamma"));
  auto under_other = DiskTier::Open(dir, 1 << 20, other);
  UOPD_ASSERT_OK(under_other);
  EXPECT_EQ((*under_other)->Get(Key('c'))->value_or(""), "gamma") << "signed with the first";
  EXPECT_TRUE(
      testing::StatusIs(DiskTier::Open(dir, 1 << 20, {}), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(
      testing::StatusIs(DiskTier::Open(dir, 1 << 20, {""}), absl::StatusCode::kInvalidArgument));
}

TEST(DiskTier, LinksInsideTheFolderAreNotFollowed) {
  const std::string dir = testing::TempDir("disk-links");
  const std::string cache = dir + "/cache", outside = dir + "/outside";
  std::filesystem::create_directories(outside);
  auto tier = DiskTier::Open(cache, 1 << 20, kSecret);
  UOPD_ASSERT_OK(tier);
  // A shard folder that is a link to a folder outside: nothing is written there, and an entry
  // there (well signed, even) is not read.
  const std::string key = Key('a');
  ASSERT_EQ(symlink(outside.c_str(), (cache + "/aa").c_str()), 0);
  EXPECT_TRUE(testing::StatusIs((*tier)->Put(key, "alpha"), absl::StatusCode::kFailedPrecondition,
                                {"not followed"}));
  EXPECT_TRUE(std::filesystem::is_empty(outside)) << "wrote outside the cache folder";
  {
    auto elsewhere = DiskTier::Open(dir + "/elsewhere", 1 << 20, kSecret);
    UOPD_ASSERT_OK(elsewhere);
    UOPD_ASSERT_OK((*elsewhere)->Put(key, "planted"));
    std::filesystem::copy_file((*elsewhere)->PathOf(key), outside + "/" + key + ".uopd");
  }
  EXPECT_TRUE(testing::StatusIs((*tier)->Get(key), absl::StatusCode::kFailedPrecondition))
      << "a miss the cache logs, not a read through the link";
  UOPD_EXPECT_OK((*tier)->Erase(key));
  EXPECT_TRUE(std::filesystem::exists(outside + "/" + key + ".uopd")) << "deleted through it";
  EXPECT_GE((*tier)->stats().errors, 2);

  // An entry that is a link (to a good entry elsewhere) is dropped, not read; the target stays.
  const std::string b = Key('b');
  UOPD_ASSERT_OK((*tier)->Put(b, "beta"));
  const std::string target = dir + "/target.uopd";
  std::filesystem::copy_file((*tier)->PathOf(b), target);
  std::filesystem::remove((*tier)->PathOf(b));
  ASSERT_EQ(symlink(target.c_str(), (*tier)->PathOf(b).c_str()), 0);
  auto linked = (*tier)->Get(b);
  UOPD_ASSERT_OK(linked);
  EXPECT_FALSE(linked->has_value());
  EXPECT_EQ((*tier)->stats().corrupt, 1);
  EXPECT_FALSE(std::filesystem::is_symlink((*tier)->PathOf(b)));
  // A Put over a link replaces the link and leaves what it pointed at alone.
  const std::string before = ReadFile(target);
  ASSERT_EQ(symlink(target.c_str(), (*tier)->PathOf(b).c_str()), 0);
  UOPD_ASSERT_OK((*tier)->Put(b, "new beta"));
  EXPECT_FALSE(std::filesystem::is_symlink((*tier)->PathOf(b)));
  EXPECT_EQ(ReadFile(target), before);
  EXPECT_EQ((*tier)->Get(b)->value_or(""), "new beta");
  // The start-up scan does not count (or clean up) what is behind the link either.
  auto reopened = DiskTier::Open(cache, 1 << 20, kSecret);
  UOPD_ASSERT_OK(reopened);
  (*reopened)->TEST_WaitForMaintenance();
  EXPECT_EQ((*reopened)->stats().entries, 1);
  EXPECT_TRUE(std::filesystem::exists(outside + "/" + key + ".uopd"));
}

TEST(CacheSecret, IsMadeOnceOwnerOnlyAndRefusedWhenOthersCanReadIt) {
  const std::string dir = testing::TempDir("cache-secret");
  const std::string path = dir + "/state/uopd.secret";
  auto made = ReadOrCreateSecretFile(path, "the secret");
  UOPD_ASSERT_OK(made);
  EXPECT_EQ(made->size(), 64u) << "32 random bytes, in hex";
  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600);
  EXPECT_EQ(ReadOrCreateSecretFile(path, "the secret").value_or(""), *made) << "kept";
  EXPECT_NE(ReadOrCreateSecretFile(dir + "/another.secret", "the secret").value_or(*made), *made);
  chmod(path.c_str(), 0640);
  EXPECT_TRUE(testing::StatusIs(ReadOrCreateSecretFile(path, "the secret"),
                                absl::StatusCode::kInvalidArgument, {"readable by others"}));
  const std::string short_file = dir + "/short.secret";
  std::ofstream(short_file) << "tiny";
  chmod(short_file.c_str(), 0600);
  EXPECT_TRUE(testing::StatusIs(ReadOrCreateSecretFile(short_file, "the secret"),
                                absl::StatusCode::kInvalidArgument, {"at least 32"}));
  std::ofstream(dir + "/a-file") << "x";
  EXPECT_TRUE(testing::StatusIs(ReadOrCreateSecretFile(dir + "/a-file/uopd.secret", "the secret"),
                                absl::StatusCode::kFailedPrecondition));
}

TEST(KernelCache, CompilesOnceForConcurrentRequestsAndWritesThrough) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  auto disk = DiskTier::Open(testing::TempDir("kernel-cache"), 1 << 20, kSecret);
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
  m.mutable_globals(0)->set_access_begin(8);  // slot 0 writes elements [8, 40) only
  m.mutable_globals(0)->set_access_end(40);
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
  // Which elements a slot accesses is part of what the program says (the overlap check of a
  // binding reads it); a slot that says nothing accesses any.
  EXPECT_EQ(back->spec.globals[0].Accessed().begin, 8);
  EXPECT_EQ(back->spec.globals[0].Accessed().end, 40);
  EXPECT_FALSE(back->spec.globals[1].accessed.has_value());
  EXPECT_EQ(back->spec.globals[1].Accessed().end, 64);
  ProgramSpec wider = *spec;
  wider.globals[0].accessed->end = 64;
  EXPECT_FALSE(SameProgramMetadata(wider, *spec));
  v1::ProgramMetadata past_the_end = SymbolicMetadata();
  past_the_end.mutable_globals(0)->set_access_end(65);
  EXPECT_FALSE(DecodeProgramMetadata(past_the_end).ok());

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

// A shared tier (as Redis is) that records what is published to it and finds nothing.
class RecordingSharedTier : public CacheTier {
 public:
  const char* name() const override { return "recording"; }
  bool shared() const override { return true; }
  bool vouches_for_hits() const override { return true; }
  absl::StatusOr<std::optional<std::string>> Get(const std::string&) override {
    return std::optional<std::string>();
  }
  absl::Status Put(const std::string& key, const std::string& value) override {
    absl::MutexLock lock(&mu_);
    puts_.emplace_back(key, value);
    return absl::OkStatus();
  }
  absl::Status Erase(const std::string&) override { return absl::OkStatus(); }
  std::vector<std::pair<std::string, std::string>> puts() {
    absl::MutexLock lock(&mu_);
    return puts_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<std::string, std::string>> puts_;
};

// A local tier that says nothing about where its entries came from (vouches_for_hits false).
class UnvouchedTier : public MemoryTier {
 public:
  UnvouchedTier() : MemoryTier(1 << 20) {}
  const char* name() const override { return "unvouched"; }
  bool vouches_for_hits() const override { return false; }
};

TEST(KernelCache, ADiskEntryThatFailsItsMacIsRecompiledAndNeverPublished) {
  const std::string dir = testing::TempDir("kernel-cache-forged");
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  auto disk = DiskTier::Open(dir, 1 << 20, kSecret);
  UOPD_ASSERT_OK(disk);
  DiskTier* disk_tier = disk->get();
  tiers.push_back(std::move(*disk));
  auto shared = std::make_unique<RecordingSharedTier>();
  RecordingSharedTier* redis = shared.get();
  tiers.push_back(std::move(shared));
  KernelCache cache(std::move(tiers));
  // What a worker restarting finds: an entry for this key and AST whose object was replaced,
  // with the digest the unauthenticated format had recomputed.
  const CacheKey key = SomeKey("p");
  const std::string attacker = SerializeCacheEntry(testing::EntryOf(key, "attacker object"));
  std::filesystem::create_directories(
      std::filesystem::path(disk_tier->PathOf(key.Hex())).parent_path());
  Forge(disk_tier->PathOf(key.Hex()), "UOPDK1\n", attacker);
  int compiles = 0;
  auto result = cache.GetOrCompile(key, [&]() -> absl::StatusOr<CacheEntry> {
    ++compiles;
    return testing::EntryOf(key, "compiled object");
  });
  UOPD_ASSERT_OK(result);
  EXPECT_EQ(result->entry->kernel.bytes, "compiled object");
  EXPECT_EQ(result->answered_by, "compiled");
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(disk_tier->stats().corrupt, 1);
  for (const auto& [published_key, value] : redis->puts()) {
    EXPECT_NE(value, attacker) << "published the forged entry to the cluster";
  }
  ASSERT_EQ(redis->puts().size(), 1u) << "only this daemon's compile";
  EXPECT_EQ(redis->puts()[0].second, SerializeCacheEntry(testing::EntryOf(key, "compiled object")));
  EXPECT_EQ(disk_tier->Get(key.Hex())->value_or(""), redis->puts()[0].second) << "replaced";
}

TEST(KernelCache, AHitOfATierThatDoesNotVouchForItGoesNowhereElse) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(1 << 20));
  CacheTier* memory = tiers.back().get();
  tiers.push_back(std::make_unique<UnvouchedTier>());
  CacheTier* unvouched = tiers.back().get();
  auto shared = std::make_unique<RecordingSharedTier>();
  RecordingSharedTier* redis = shared.get();
  tiers.push_back(std::move(shared));
  KernelCache cache(std::move(tiers));
  const CacheKey key = SomeKey("u");
  const std::string value = SerializeCacheEntry(testing::EntryOf(key, "from somewhere"));
  UOPD_ASSERT_OK(unvouched->Put(key.Hex(), value));
  auto result = cache.GetOrCompile(key, []() -> absl::StatusOr<CacheEntry> {
    return absl::InternalError("not compiled: the tier has it");
  });
  UOPD_ASSERT_OK(result);
  EXPECT_EQ(result->answered_by, "unvouched");
  EXPECT_TRUE(redis->puts().empty()) << "published an entry nobody vouched for";
  EXPECT_FALSE(memory->Get(key.Hex())->has_value()) << "written through, it would come out vouched";
  EXPECT_FALSE(cache.GetSerialized(key.Hex()).has_value()) << "CacheService.Get signs this";
}

}  // namespace
}  // namespace uopd
