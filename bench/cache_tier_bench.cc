// cache_tier_bench: the latency of a Compile call by where its answer comes from, side by side
// in one run (issue 10): a cold compile, a Redis hit, a disk hit and a memory hit, and what the
// Redis tier adds to a miss. Real daemons on loopback ports, one real redis-server.
//
//   cache_tier_bench --daemon PATH [--corpus DIR] [--cuda_kernels N]
//
// Every kernel AST of the corpus (cases and plans, duplicates removed) is compiled for the CPU
// through each source in turn, kernel by kernel (interleaved, so load on the machine falls on
// every column alike):
//   cold       a daemon with no Redis and empty caches
//   cold+redis a daemon with the Redis tier and an empty Redis (the miss costs one GET more)
//   redis      a fresh daemon (empty memory and disk) after the second one published
//   disk       a daemon started on a copy of the second one's disk cache, without Redis
//   memory     the second daemon again
// With the CUDA toolkit built in, the first N kernels are also compiled for sm_90 (NVRTC; the
// entries, PTX and CUBIN, are larger) cold and then from Redis.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "client/uopd_client.h"
#include "core/corpus/corpus_file.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/redis_process.h"

namespace {

using uopd::testing::DaemonProcess;

std::vector<uopd::v1::Graph> DistinctKernels(const std::string& corpus) {
  std::vector<uopd::v1::Graph> graphs;
  std::set<std::string> seen;
  auto files = uopd::ListCorpusFiles({corpus});
  if (!files.ok()) return graphs;
  auto add = [&](const uopd::v1::Graph& g) {
    if (seen.insert(g.SerializeAsString()).second) graphs.push_back(g);
  };
  for (const std::string& file : *files) {
    auto entry = uopd::LoadCorpusFile(file);
    if (!entry.ok()) continue;
    if (!entry->is_plan) {
      add(entry->kase.ast());
    } else {
      for (const auto& k : entry->plan.kernels()) add(k.ast());
    }
  }
  return graphs;
}

struct Column {
  std::string name;
  std::vector<double> seconds;
  std::map<std::string, int> answered_by;
  int errors = 0;
};

void CompileOn(uopd::Client& client, const uopd::v1::Graph& graph, const std::string& target,
               Column& column) {
  uopd::v1::CompileRequest request;
  *request.mutable_ast() = graph;
  if (target.empty()) {
    request.set_device("CPU");
  } else {
    request.set_device("CUDA");
    request.set_target(target);
  }
  absl::StatusOr<uopd::v1::CompileResponse> response;
  const double s = uopd::bench::SecondsOf([&] { response = client.Compile(request); });
  if (!response.ok()) {
    ++column.errors;
    if (column.errors == 1) {
      std::fprintf(stderr, "%s: %s\n", column.name.c_str(), response.status().ToString().c_str());
    }
    return;
  }
  column.seconds.push_back(s);
  ++column.answered_by[response->cache_tier()];
}

void Print(const std::vector<Column>& columns) {
  const double cold = uopd::bench::Percentile(columns[0].seconds, 0.5);
  std::printf("| source | kernels | median µs | p90 µs | cold / this | answered by |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Column& c : columns) {
    const double median = uopd::bench::Percentile(c.seconds, 0.5);
    std::string by;
    for (const auto& [tier, n] : c.answered_by)
      absl::StrAppend(&by, by.empty() ? "" : ", ", tier, " ", n);
    if (c.errors > 0) absl::StrAppend(&by, ", errors ", c.errors);
    std::printf("| %s | %zu | %.0f | %.0f | %.1fx | %s |\n", c.name.c_str(), c.seconds.size(),
                median * 1e6, uopd::bench::Percentile(c.seconds, 0.9) * 1e6,
                median > 0 ? cold / median : 0, by.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string daemon_path, corpus = UOPD_CORPUS_DIR;
  int cuda_kernels = 40;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--daemon" && i + 1 < argc)
      daemon_path = argv[++i];
    else if (arg == "--corpus" && i + 1 < argc)
      corpus = argv[++i];
    else if (arg == "--cuda_kernels" && i + 1 < argc)
      cuda_kernels = std::atoi(argv[++i]);
  }
  if (daemon_path.empty()) {
    std::fprintf(stderr,
                 "usage: cache_tier_bench --daemon PATH [--corpus DIR] [--cuda_kernels N]\n");
    return 2;
  }
  if (uopd::testing::RedisServerPath().empty()) {
    std::fprintf(stderr, "cache_tier_bench: redis-server is not installed\n");
    return 1;
  }
  const std::vector<uopd::v1::Graph> kernels = DistinctKernels(corpus);
  if (kernels.empty()) {
    std::fprintf(stderr, "cache_tier_bench: no kernels under %s\n", corpus.c_str());
    return 1;
  }
  uopd::testing::RedisProcess redis;
  if (!redis.running()) return 1;
  const std::string dir = uopd::testing::TempDir("cache-tier-bench");
  const std::string key_file = dir + "/cluster.key";
  std::ofstream(key_file) << "cache-tier-bench-cluster-key-0123456789abcdef\n";
  chmod(key_file.c_str(), 0600);
  // Timed as in production: without the lock-order checks DaemonProcess asks for in tests.
  const std::vector<std::string> alone = {"--check_lock_order=false"};
  const std::vector<std::string> shared = {
      "--redis_url=" + redis.url(), "--cluster_key_file=" + key_file, "--check_lock_order=false"};

  DaemonProcess cold(daemon_path, dir + "/cold", alone);
  DaemonProcess publisher(daemon_path, dir + "/publisher", shared);
  if (!cold.running() || !publisher.running()) return 1;
  uopd::Client cold_client(cold.address()), publisher_client(publisher.address());

  std::printf("cache_tier_bench: %zu distinct corpus kernels, CPU target\n\n", kernels.size());
  std::vector<Column> miss = {{"cold compile"}, {"cold compile, Redis tier on (miss)"}};
  for (const auto& graph : kernels) {
    CompileOn(cold_client, graph, "", miss[0]);
    CompileOn(publisher_client, graph, "", miss[1]);
  }
  // Wait for the publications, then start the readers.
  for (int i = 0; i < 400; ++i) {
    auto stats = publisher_client.CacheStats();
    bool idle = stats.ok();
    if (stats.ok()) {
      for (const auto& t : stats->tiers()) {
        if (t.tier() == "redis") idle = idle && t.publish_queue_bytes() == 0 && t.published() > 0;
      }
    }
    if (idle) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::filesystem::copy(dir + "/publisher", dir + "/disk-copy",
                        std::filesystem::copy_options::recursive);
  DaemonProcess reader(daemon_path, dir + "/reader", shared);
  DaemonProcess disk(daemon_path, dir + "/disk-copy", alone);
  if (!reader.running() || !disk.running()) return 1;
  uopd::Client reader_client(reader.address()), disk_client(disk.address());
  std::vector<Column> hits = {miss[0], {"Redis hit"}, {"disk hit"}, {"memory hit"}};
  for (const auto& graph : kernels) {
    CompileOn(reader_client, graph, "", hits[1]);
    CompileOn(disk_client, graph, "", hits[2]);
    CompileOn(publisher_client, graph, "", hits[3]);
  }
  Print(miss);
  std::printf("\n");
  Print(hits);
  const double added =
      uopd::bench::Percentile(miss[1].seconds, 0.5) - uopd::bench::Percentile(miss[0].seconds, 0.5);
  std::printf("\nRedis tier on a miss: %+.0f µs median (%.3fx the cold compile)\n", added * 1e6,
              uopd::bench::Percentile(miss[1].seconds, 0.5) /
                  uopd::bench::Percentile(miss[0].seconds, 0.5));

#ifdef UOPD_WITH_CUDA
  const size_t n = std::min<size_t>(kernels.size(), static_cast<size_t>(cuda_kernels));
  std::vector<Column> cuda = {
      {"sm_90 cold compile (NVRTC)"}, {"sm_90 Redis hit"}, {"sm_90 memory hit"}};
  for (size_t i = 0; i < n; ++i) CompileOn(publisher_client, kernels[i], "sm_90", cuda[0]);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  DaemonProcess cuda_reader(daemon_path, dir + "/cuda-reader", shared);
  uopd::Client cuda_client(cuda_reader.address());
  for (size_t i = 0; i < n; ++i) {
    CompileOn(cuda_client, kernels[i], "sm_90", cuda[1]);
    CompileOn(publisher_client, kernels[i], "sm_90", cuda[2]);
  }
  std::printf("\nCUDA sm_90, first %zu kernels (PTX + CUBIN entries)\n\n", n);
  Print(cuda);
#else
  (void)cuda_kernels;
  std::printf("\n(built without the CUDA toolkit: no sm_90 rows)\n");
#endif
  return 0;
}
