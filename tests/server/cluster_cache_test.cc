// A cluster on one machine: two real daemons with their own disk caches sharing one real
// redis-server. What one compiles (and what its searches choose) the other runs without
// compiling; Redis going away costs neither a failed call nor more than a bounded time.
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/remote_corpus.h"
#include "client/uopd_client.h"
#include "core/corpus/corpus_file.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/redis_process.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::DaemonProcess;
using testing::RedisProcess;

std::string ClusterKeyFile(const std::string& dir) {
  std::string path = dir + "/cluster.key";
  std::ofstream(path) << "0123456789abcdef0123456789abcdef-test-key\n";
  chmod(path.c_str(), 0600);
  return path;
}

// The sum of the samples of `name` whose labels include every one of `labels` (k="v"), or -1
// when there is none.
double MetricSum(const DaemonProcess& daemon, const std::string& name,
                 const std::vector<std::string>& labels = {}) {
  double sum = -1;
  for (absl::string_view line : absl::StrSplit(daemon.ScrapeMetrics(), '\n')) {
    if (!absl::StartsWith(line, name + "{") && !absl::StartsWith(line, name + " ")) continue;
    bool match = true;
    for (const std::string& label : labels) match = match && absl::StrContains(line, label);
    double value = 0;
    size_t space = line.rfind(' ');
    if (!match || space == absl::string_view::npos ||
        !absl::SimpleAtod(line.substr(space + 1), &value)) {
      continue;
    }
    sum = (sum < 0 ? 0 : sum) + value;
  }
  return sum;
}

double Compilations(const DaemonProcess& d) { return MetricSum(d, "uopd_compilations_total"); }
double RedisHits(const DaemonProcess& d) {
  return MetricSum(d, "uopd_cache_requests_total", {"tier=\"redis\"", "result=\"hit\""});
}

// Waits until `daemon` has published everything it queued for Redis.
bool WaitPublished(const DaemonProcess& daemon, double at_least) {
  for (int i = 0; i < 400; ++i) {
    double published =
        MetricSum(daemon, "uopd_cache_publish_total", {"tier=\"redis\"", "result=\"published\""});
    double queued = MetricSum(daemon, "uopd_cache_publish_queue_bytes", {"tier=\"redis\""});
    if (published >= at_least && queued == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<CorpusEntry> Corpus() {
  std::vector<CorpusEntry> entries;
  auto files = ListCorpusFiles({UOPD_CORPUS_DIR});
  EXPECT_TRUE(files.ok()) << files.status();
  if (!files.ok()) return entries;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (entry.ok()) entries.push_back(*std::move(entry));
  }
  return entries;
}

// Runs `entries` on `daemon`, each within `deadline`; the number that failed.
int RunAll(const DaemonProcess& daemon, const std::vector<CorpusEntry>& entries,
           absl::Duration deadline, const v1::Optimization& optimization = {}) {
  Client client(daemon.address());
  int failed = 0;
  for (const CorpusEntry& entry : entries) {
    const absl::Time start = absl::Now();
    absl::Status status = RunCorpusEntryRemote(client, entry, "CPU", optimization).status();
    const absl::Duration took = absl::Now() - start;
    if (!status.ok() || took > deadline) {
      ++failed;
      ADD_FAILURE() << entry.path << ": " << status << " in " << took;
    }
  }
  return failed;
}

class ClusterCache : public ::testing::Test {
 protected:
  void SetUp() override {
    UOPD_REQUIRE_REDIS();
    redis_ = std::make_unique<RedisProcess>();
    ASSERT_TRUE(redis_->running());
    dir_ = testing::TempDir("cluster");
    key_file_ = ClusterKeyFile(dir_);
  }
  std::unique_ptr<DaemonProcess> Worker(const std::string& name,
                                        std::vector<std::string> flags = {}) {
    flags.push_back("--redis_url=" + redis_->url());
    flags.push_back("--cluster_key_file=" + key_file_);
    flags.push_back("--redis_connect_timeout=200ms");
    flags.push_back("--redis_command_timeout=500ms");
    flags.push_back("--redis_retry_after=2s");
    auto daemon = std::make_unique<DaemonProcess>(UOPD_DAEMON_PATH, dir_ + "/" + name, flags);
    EXPECT_TRUE(daemon->running());
    return daemon;
  }

  std::unique_ptr<RedisProcess> redis_;
  std::string dir_, key_file_;
};

TEST_F(ClusterCache, ASecondWorkerRunsTheCorpusWithoutCompiling) {
  const std::vector<CorpusEntry> corpus = Corpus();
  ASSERT_GT(corpus.size(), 300u);
  auto a = Worker("a");
  auto b = Worker("b");
  ASSERT_EQ(RunAll(*a, corpus, absl::Seconds(60)), 0);
  const double compiled_by_a = Compilations(*a);
  EXPECT_GT(compiled_by_a, 300);
  ASSERT_TRUE(WaitPublished(*a, compiled_by_a));

  ASSERT_EQ(RunAll(*b, corpus, absl::Seconds(60)), 0) << "b's outputs match tinygrad's";
  EXPECT_EQ(Compilations(*b), 0) << "b compiled what a had published";
  EXPECT_EQ(RedisHits(*b), compiled_by_a);
  EXPECT_EQ(MetricSum(*b, "uopd_cache_requests_total", {"tier=\"redis\"", "result=\"rejected\""}),
            0);
}

TEST_F(ClusterCache, RedisGoingAwayFailsNothingAndPublishingResumes) {
  const std::vector<CorpusEntry> corpus = Corpus();
  const size_t half = corpus.size() / 2;
  auto a = Worker("a");
  auto b = Worker("b");
  ASSERT_EQ(RunAll(*a, {corpus.begin(), corpus.begin() + half}, absl::Seconds(60)), 0);
  redis_->Kill();
  // Every call still answers, correctly and promptly: each lookup costs at most a refused
  // connection until the breaker opens.
  EXPECT_EQ(RunAll(*a, corpus, absl::Seconds(10)), 0);
  EXPECT_EQ(RunAll(*b, corpus, absl::Seconds(10)), 0);
  EXPECT_GT(MetricSum(*a, "uopd_cache_errors_total", {"tier=\"redis\""}), 0);
  EXPECT_EQ(MetricSum(*b, "uopd_cache_breaker_open", {"tier=\"redis\""}), 1);

  ASSERT_TRUE(redis_->Start());  // empty: a restarted cache without persistence
  // Kernels a compiles now reach b through the restarted Redis (once the breaker lets a try).
  v1::Optimization none;
  none.set_mode(v1::Optimization::NONE);
  const std::vector<CorpusEntry> some(corpus.begin(), corpus.begin() + 20);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // --redis_retry_after
  ASSERT_EQ(RunAll(*a, some, absl::Seconds(60), none), 0);
  ASSERT_TRUE(WaitPublished(*a, 1));
  ASSERT_TRUE(redis_->Command({"DBSIZE"}).has_value());
  EXPECT_GT(std::stoi(redis_->Command({"DBSIZE"}).value_or("0")), 0);
  const double before = Compilations(*b);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(RunAll(*b, some, absl::Seconds(60), none), 0);
  EXPECT_EQ(Compilations(*b), before) << "b found what a published after Redis returned";
  EXPECT_EQ(MetricSum(*b, "uopd_cache_breaker_open", {"tier=\"redis\""}), 0);
}

TEST_F(ClusterCache, ForgedEntriesAreNeverRunAndTheKernelIsCompiledLocally) {
  const std::vector<CorpusEntry> corpus = Corpus();
  const std::vector<CorpusEntry> some(corpus.begin(), corpus.begin() + 5);
  auto a = Worker("a");
  ASSERT_EQ(RunAll(*a, some, absl::Seconds(60)), 0);
  ASSERT_TRUE(WaitPublished(*a, 5));
  // Someone with write access to Redis, but not the cluster key, replaces every entry with one
  // of their own: the first entry's bytes under every key (a copy), flipped bits, bare values.
  std::vector<std::string> keys =
      absl::StrSplit(redis_->Command({"KEYS", "uopd:*"}).value_or(""), '\n', absl::SkipEmpty());
  ASSERT_GE(keys.size(), 5u);
  std::vector<std::string> genuine;
  for (const std::string& key : keys) genuine.push_back(redis_->Command({"GET", key}).value_or(""));
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string value = genuine[i];
    if (i % 3 == 0) value = genuine[(i + 1) % keys.size()];  // another kernel's signed entry
    if (i % 3 == 1) value[value.size() / 2] ^= 0x40;
    if (i % 3 == 2) value = value.substr(40);  // the entry without its signature
    redis_->Command({"SET", keys[i], value});
  }
  auto b = Worker("b");
  ASSERT_EQ(RunAll(*b, some, absl::Seconds(60)), 0) << "b computes the right outputs";
  EXPECT_EQ(RedisHits(*b), 0);
  EXPECT_EQ(MetricSum(*b, "uopd_cache_requests_total", {"tier=\"redis\"", "result=\"rejected\""}),
            static_cast<double>(keys.size()));
  EXPECT_EQ(Compilations(*b), static_cast<double>(keys.size()));
}

TEST_F(ClusterCache, TargetsAndSearchesTravelUnderTheirOwnKeys) {
  auto a = Worker("a", {"--search_budget=3s"});
  auto b = Worker("b", {"--search_budget=3s"});
  Client client_a(a->address()), client_b(b->address());
  const v1::Graph matmul = testing::Matmul(32, 16, 64);
  v1::CompileRequest cpu;
  *cpu.mutable_ast() = matmul;
  cpu.set_device("CPU");
  UOPD_ASSERT_OK(client_a.Compile(cpu));

  // A search on a: its choice (and the kernel it chose) are entries like any other.
  v1::CompileRequest search = cpu;
  search.mutable_optimization()->set_mode(v1::Optimization::SEARCH);
  auto searched = client_a.Compile(search, absl::Seconds(60));
  UOPD_ASSERT_OK(searched);
  ASSERT_TRUE(WaitPublished(*a, 2));

  auto cpu_on_b = client_b.Compile(cpu);
  UOPD_ASSERT_OK(cpu_on_b);
  EXPECT_EQ(cpu_on_b->cache_tier(), "redis");
  const absl::Time start = absl::Now();
  auto searched_on_b = client_b.Compile(search, absl::Seconds(60));
  UOPD_ASSERT_OK(searched_on_b);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2)) << "b did not search again";
  EXPECT_EQ(searched_on_b->cache_key(), searched->cache_key());
  // From Redis, or from b's memory when the search kept the heuristics' kernel.
  EXPECT_NE(searched_on_b->cache_tier(), "compiled");
  EXPECT_EQ(Compilations(*b), 0);

#ifdef UOPD_WITH_CUDA
  // A CPU entry never answers CUDA; sm_80 never answers sm_90.
  v1::CompileRequest sm80;
  *sm80.mutable_ast() = matmul;
  sm80.set_device("CUDA");
  sm80.set_target("sm_80");
  auto on_a = client_a.Compile(sm80, absl::Seconds(120));
  UOPD_ASSERT_OK(on_a);
  EXPECT_EQ(on_a->cache_tier(), "compiled") << "the CPU entry did not answer CUDA";
  ASSERT_TRUE(WaitPublished(*a, 3));
  v1::CompileRequest sm90 = sm80;
  sm90.set_target("sm_90");
  auto sm90_on_b = client_b.Compile(sm90, absl::Seconds(120));
  UOPD_ASSERT_OK(sm90_on_b);
  EXPECT_EQ(sm90_on_b->cache_tier(), "compiled") << "sm_80's entry did not answer sm_90";
  auto sm80_on_b = client_b.Compile(sm80, absl::Seconds(120));
  UOPD_ASSERT_OK(sm80_on_b);
  EXPECT_EQ(sm80_on_b->cache_tier(), "redis");
  EXPECT_EQ(sm80_on_b->cache_key(), on_a->cache_key());
#else
  GTEST_LOG_(INFO) << "built without the CUDA toolkit: CUDA target separation not tested here";
#endif
}

// The output of `command` (stdout), and its exit status in `status`.
std::string Shell(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  *status = pclose(pipe);
  return out;
}

TEST_F(ClusterCache, WarmingFromOneWorkerServesAnother) {
  auto a = Worker("a");
  const std::string cases = absl::StrCat(UOPD_CORPUS_DIR, "/cases");
  int status = -1;
  std::string out = Shell(absl::StrCat(UOPCTL_PATH, " --server ", a->address(), " cache warm ",
                                       cases, " --target CPU 2>&1"),
                          &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, " failed") && absl::StrContains(out, ", 0 failed")) << out;
  const double compiled = Compilations(*a);
  EXPECT_GT(compiled, 300);
  out = Shell(absl::StrCat(UOPCTL_PATH, " --server ", a->address(), " cache warm ", cases,
                           " --target CPU 2>&1"),
              &status);
  EXPECT_TRUE(absl::StrContains(out, "0 compiled, ")) << out;
  ASSERT_TRUE(WaitPublished(*a, compiled));

  // A worker that joins later: its first lookups come from Redis.
  auto b = Worker("b");
  out = Shell(absl::StrCat(UOPCTL_PATH, " --server ", b->address(), " cache warm ", cases,
                           " --target CPU 2>&1"),
              &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "0 compiled, ")) << out;
  EXPECT_EQ(Compilations(*b), 0);
  out = Shell(absl::StrCat(UOPCTL_PATH, " --server ", b->address(), " cache stats 2>&1"), &status);
  EXPECT_TRUE(absl::StrContains(out, "redis: read ")) << out;
  EXPECT_TRUE(absl::StrContains(out, "breaker closed")) << out;

  // A bad folder or target is reported, not a crash.
  out = Shell(absl::StrCat(UOPCTL_PATH, " --server ", b->address(), " cache warm ", cases,
                           "/no-such-folder 2>&1"),
              &status);
  EXPECT_NE(status, 0) << out;
}

TEST_F(ClusterCache, EntriesCompiledBeforeJoiningReachTheClusterAtFirstUse) {
  const std::vector<CorpusEntry> corpus = Corpus();
  const std::vector<CorpusEntry> some(corpus.begin(), corpus.begin() + 10);
  const std::string cache_dir = dir_ + "/solo";
  {
    // The same worker (same disk cache) before it was given the Redis tier.
    DaemonProcess solo(UOPD_DAEMON_PATH, cache_dir);
    ASSERT_EQ(RunAll(solo, some, absl::Seconds(60)), 0);
  }
  auto a = Worker("solo");
  ASSERT_EQ(RunAll(*a, some, absl::Seconds(60)), 0);
  EXPECT_EQ(Compilations(*a), 0) << "served from its disk";
  ASSERT_TRUE(WaitPublished(*a, 10));
  auto b = Worker("b");
  ASSERT_EQ(RunAll(*b, some, absl::Seconds(60)), 0);
  EXPECT_EQ(Compilations(*b), 0);
}

TEST(ClusterFlags, TheRedisPasswordCanComeFromAnOwnerOnlyFile) {
  UOPD_REQUIRE_REDIS();
  RedisProcess redis({}, "pa55word");
  ASSERT_TRUE(redis.running());
  const std::string dir = testing::TempDir("cluster-password");
  const std::string password = dir + "/redis.password";
  std::ofstream(password) << "pa55word\n";
  chmod(password.c_str(), 0600);
  const std::string url = "redis://127.0.0.1:" + std::to_string(redis.port());
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/c",
                       {"--redis_url=" + url, "--redis_password_file=" + password,
                        "--cluster_key_file=" + ClusterKeyFile(dir)});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  v1::CompileRequest request;
  *request.mutable_ast() = testing::Matmul(4, 4, 4);
  UOPD_ASSERT_OK(client.Compile(request));
  EXPECT_TRUE(WaitPublished(daemon, 1));
  EXPECT_EQ(MetricSum(daemon, "uopd_cache_errors_total", {"tier=\"redis\""}), 0);
  EXPECT_EQ(std::stoi(redis.Command({"DBSIZE"}).value_or("0")), 1);
  daemon.Stop();

  // A password file others can read, or a cluster key file, keeps the daemon from starting.
  chmod(password.c_str(), 0640);
  DaemonProcess readable(UOPD_DAEMON_PATH, dir + "/c",
                         {"--redis_url=" + url, "--redis_password_file=" + password,
                          "--cluster_key_file=" + ClusterKeyFile(dir)});
  EXPECT_FALSE(readable.running());
  const std::string key = ClusterKeyFile(dir);
  chmod(key.c_str(), 0644);
  DaemonProcess readable_key(UOPD_DAEMON_PATH, dir + "/c",
                             {"--redis_url=" + url, "--cluster_key_file=" + key});
  EXPECT_FALSE(readable_key.running());
}

TEST(ClusterFlags, RedisWithoutAClusterKeyOrWithABadUrlDoesNotStart) {
  UOPD_REQUIRE_REDIS();
  const std::string dir = testing::TempDir("cluster-flags");
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--redis_url=redis://127.0.0.1:6379"},
        std::vector<std::string>{"--redis_url=redis://127.0.0.1:99999",
                                 "--cluster_key_file=" + ClusterKeyFile(dir)}}) {
    DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/c", flags);
    EXPECT_FALSE(daemon.running()) << flags[0];
  }
}

}  // namespace
}  // namespace uopd
