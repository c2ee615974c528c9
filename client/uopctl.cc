// uopctl: the command-line client of a uopd daemon.
//
//   uopctl [--server ADDR] devices
//   uopctl [--server ADDR] compile FILE [--device D | --target sm_XX] [--emit src|bytes|ptx]
//                                       [--optimize MODE] [--fma]
//   uopctl [--server ADDR] run PATH... [--device D] [--optimize MODE] [--fma] [--verbose]
//                                      [--repeat N]
//   uopctl [--server ADDR] cache stats
//   uopctl [--server ADDR] cache warm PATH... [--target T[,T...]] [--optimize MODE]
//
// Credentials: --token_file FILE (or $UOPD_TOKEN) for a bearer token; --tls_ca FILE for a TLS
// server, with --tls_cert FILE --tls_key FILE where the server requires client certificates.
//
// FILE is a kernel AST (Graph JSON) or a corpus case. `run` takes corpus case and plan files or
// folders, prints one line per failure and ends with "N passed, M failed" (exit 0 only when
// nothing failed), like uopd-conformance but through the daemon. MODE is heuristic, none, search
// or an opt list in tinygrad's spelling ("UPCAST(1, 16) UNROLL(0, 4)"); the server's default
// otherwise. `cache warm` compiles every kernel AST under PATH (Graph JSON, corpus cases, plans)
// into the server's cache, and so into the cluster's shared tier, for each target: a device
// name (CPU, CUDA:0: that device's own target) or a GPU architecture (sm_80, sm_90).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/remote_corpus.h"
#include "client/uopd_client.h"
#include "core/corpus/corpus_file.h"
#include "core/wire/opt_codec.h"
#include "google/protobuf/util/json_util.h"

namespace {

constexpr char kUsage[] =
    "usage: uopctl [--server ADDR] COMMAND\n"
    "  devices                                   list the server's devices\n"
    "  compile FILE [--device D | --target sm_XX] [--emit src|bytes|ptx]\n"
    "                                            compile a kernel AST (Graph JSON or corpus case)\n"
    "  run PATH... [--device D] [--verbose]      run corpus cases and plans through the server\n"
    "      [--repeat N]                          N times each; --verbose prints the median kernel "
    "time\n"
    "  (compile, run) --optimize heuristic|none|search|'UPCAST(1, 16) UNROLL(0, 4)'\n"
    "  (compile, run) --fma                      allow fused multiply-adds (one rounding)\n"
    "  cache stats                               cache tier and compilation counters\n"
    "  cache warm PATH... [--target T[,T...]]    compile kernel ASTs into the cache for targets\n"
    "                                            (CPU, CUDA:0, sm_80, ...; default --device)\n"
    "ADDR defaults to 127.0.0.1:50051 (unix:/path for a unix socket).\n"
    "credentials: --token_file FILE (or $UOPD_TOKEN), --tls_ca FILE [--tls_cert FILE "
    "--tls_key FILE]\n";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "uopctl: %s\n", status.ToString().c_str());
  return 1;
}

std::string Json(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

int Devices(uopd::Client& client) {
  auto devices = client.ListDevices();
  if (!devices.ok()) return Fail(devices.status());
  for (const auto& d : devices->devices()) {
    std::printf(
        "%-8s %s\n  base=%s threads=%d memory=%lld in_use=%lld\n  target=%s\n  compiler=%s\n",
        d.name().c_str(), d.description().c_str(), d.base_key().c_str(), d.threads(),
        static_cast<long long>(d.memory_bytes()), static_cast<long long>(d.bytes_in_use()),
        d.compile_target().c_str(), d.compiler().c_str());
  }
  return 0;
}

absl::StatusOr<uopd::v1::Graph> ReadGraph(const std::string& path) {
  auto text = uopd::ReadFileToString(path);
  if (!text.ok()) return text.status();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  uopd::v1::Graph graph;
  if (absl::StrContains(*text, "\"ast\"")) {
    uopd::v1::CorpusCase kase;
    auto status = google::protobuf::util::JsonStringToMessage(*text, &kase, options);
    if (!status.ok())
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.ToString()));
    return kase.ast();
  }
  auto status = google::protobuf::util::JsonStringToMessage(*text, &graph, options);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.ToString()));
  return graph;
}

// --optimize's value on the wire; "" is the server's default.
absl::StatusOr<uopd::v1::Optimization> OptimizationOf(const std::string& text) {
  uopd::v1::Optimization optimization;
  if (text.empty()) return optimization;
  if (text == "heuristic") {
    optimization.set_mode(uopd::v1::Optimization::HEURISTIC);
  } else if (text == "none") {
    optimization.set_mode(uopd::v1::Optimization::NONE);
  } else if (text == "search") {
    optimization.set_mode(uopd::v1::Optimization::SEARCH);
  } else {
    auto opts = uopd::ParseOptList(text);
    if (!opts.ok()) return opts.status();
    optimization.set_mode(uopd::v1::Optimization::OPTS);
    for (const uopd::Opt& opt : *opts) *optimization.add_opts() = uopd::EncodeOpt(opt);
  }
  return optimization;
}

int Compile(uopd::Client& client, const std::string& file, const std::string& device,
            const std::string& target, const std::string& emit,
            const uopd::v1::Optimization& optimization) {
  auto graph = ReadGraph(file);
  if (!graph.ok()) return Fail(graph.status());
  uopd::v1::CompileRequest request;
  *request.mutable_ast() = *graph;
  *request.mutable_optimization() = optimization;
  request.set_device(target.empty() || device != "CPU" ? device : "CUDA");
  request.set_target(target);
  request.set_want_source(emit == "src");
  request.set_want_binary(emit == "bytes" || emit == "ptx");
  auto response = client.Compile(request);
  if (!response.ok()) return Fail(response.status());
  if (emit == "src") {
    std::fwrite(response->source().data(), 1, response->source().size(), stdout);
    return 0;
  }
  if (emit == "ptx") {
    if (response->ptx().empty()) return Fail(absl::InvalidArgumentError("this target has no PTX"));
    std::fwrite(response->ptx().data(), 1, response->ptx().size(), stdout);
    return 0;
  }
  if (emit == "bytes") {
    std::fwrite(response->binary().data(), 1, response->binary().size(), stdout);
    return 0;
  }
  std::vector<uopd::Opt> applied;
  auto decoded = uopd::DecodeOpts(response->applied_opts(), "applied_opts");
  if (decoded.ok()) applied = *decoded;
  std::printf("cache_key: %s\ncache_tier: %s\ntarget: %s\nentry: %s\nopts: %s\nmetadata: %s\n",
              response->cache_key().c_str(), response->cache_tier().c_str(),
              response->target().c_str(), response->entry().c_str(),
              uopd::OptsToString(applied).c_str(), Json(response->metadata()).c_str());
  return 0;
}

void Progress(size_t done, size_t total, int failed) {
  if (!isatty(STDERR_FILENO) || total < 2) return;
  constexpr int kWidth = 40;
  int filled = static_cast<int>(kWidth * done / total);
  std::fprintf(stderr, "\r[%s%s] %zu/%zu  %d failed", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), done, total, failed);
  if (done == total) std::fprintf(stderr, "\n");
}

int Run(uopd::Client& client, const std::vector<std::string>& paths, const std::string& device,
        const uopd::v1::Optimization& optimization, bool verbose, int repeat) {
  auto files = uopd::ListCorpusFiles(paths);
  if (!files.ok()) return Fail(files.status());
  int passed = 0, failed = 0;
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string& file = (*files)[i];
    auto entry = uopd::LoadCorpusFile(file);
    absl::Status status = entry.status();
    // The median device time of `repeat` runs, each checked.
    std::vector<double> seconds;
    for (int r = 0; r < repeat && status.ok(); ++r) {
      absl::StatusOr<double> run = uopd::RunCorpusEntryRemote(client, *entry, device, optimization);
      status = run.status();
      if (run.ok()) seconds.push_back(*run);
    }
    if (status.ok()) {
      ++passed;
      std::sort(seconds.begin(), seconds.end());
      if (verbose) {
        std::printf("PASS %s  (kernels %.1f us, median of %d)\n", file.c_str(),
                    seconds[seconds.size() / 2] * 1e6, repeat);
      }
    } else {
      ++failed;
      if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r");
      std::printf("FAIL %s: %s\n", file.c_str(), status.ToString().c_str());
      std::fflush(stdout);
    }
    Progress(i + 1, files->size(), failed);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

int CacheStats(uopd::Client& client) {
  auto stats = client.CacheStats();
  if (!stats.ok()) return Fail(stats.status());
  auto n = [](int64_t v) { return static_cast<long long>(v); };
  std::printf("%-8s %10s %10s %8s %8s %8s %10s %10s %14s\n", "tier", "hits", "misses", "corrupt",
              "rejected", "errors", "evictions", "entries", "bytes");
  for (const auto& t : stats->tiers()) {
    std::printf("%-8s %10lld %10lld %8lld %8lld %8lld %10lld %10lld %14lld\n", t.tier().c_str(),
                n(t.hits()), n(t.misses()), n(t.corrupt()), n(t.rejected()), n(t.errors()),
                n(t.evictions()), n(t.entries()), n(t.bytes()));
  }
  for (const auto& t : stats->tiers()) {
    if (t.tier() != "redis") continue;  // the shared tier's own figures
    std::printf(
        "%s: read %lld bytes, published %lld entries (%lld bytes), %lld refused, %lld dropped, "
        "%lld bytes queued; breaker %s (tripped %lld times)\n",
        t.tier().c_str(), n(t.read_bytes()), n(t.published()), n(t.written_bytes()),
        n(t.publish_failed()), n(t.publish_dropped()), n(t.publish_queue_bytes()),
        t.breaker_open() ? "OPEN" : "closed", n(t.breaker_trips()));
  }
  for (const auto& c : stats->compiles()) {
    std::printf("compiled %s: %lld kernels in %.3f s (%lld failed)\n", c.backend().c_str(),
                static_cast<long long>(c.compilations()), c.seconds(),
                static_cast<long long>(c.failures()));
  }
  return 0;
}

// The kernel ASTs in a corpus file or a Graph JSON file.
absl::StatusOr<std::vector<uopd::v1::Graph>> GraphsIn(const std::string& path) {
  auto entry = uopd::LoadCorpusFile(path);
  if (!entry.ok()) {
    auto graph = ReadGraph(path);
    if (!graph.ok()) return entry.status();
    return std::vector<uopd::v1::Graph>{*graph};
  }
  if (!entry->is_plan) return std::vector<uopd::v1::Graph>{entry->kase.ast()};
  std::vector<uopd::v1::Graph> graphs;
  for (const auto& kernel : entry->plan.kernels()) graphs.push_back(kernel.ast());
  return graphs;
}

int Warm(uopd::Client& client, const std::vector<std::string>& paths,
         const std::vector<std::string>& targets, const uopd::v1::Optimization& optimization) {
  auto files = uopd::ListCorpusFiles(paths);
  if (!files.ok()) return Fail(files.status());
  int compiled = 0, cached = 0, failed = 0;
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string& file = (*files)[i];
    auto graphs = GraphsIn(file);
    if (!graphs.ok()) {
      ++failed;
      if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r");
      std::printf("FAIL %s: %s\n", file.c_str(), graphs.status().ToString().c_str());
    }
    for (const uopd::v1::Graph& graph : graphs.ok() ? *graphs : std::vector<uopd::v1::Graph>{}) {
      for (const std::string& target : targets) {
        uopd::v1::CompileRequest request;
        *request.mutable_ast() = graph;
        *request.mutable_optimization() = optimization;
        // sm_XX is an architecture (no such device needed here); anything else names a device.
        if (absl::StartsWith(target, "sm_")) {
          request.set_device("CUDA");
          request.set_target(target);
        } else {
          request.set_device(target);
        }
        auto response = client.Compile(request);
        if (!response.ok()) {
          ++failed;
          if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r");
          std::printf("FAIL %s [%s]: %s\n", file.c_str(), target.c_str(),
                      response.status().ToString().c_str());
        } else if (response->cache_tier() == "compiled") {
          ++compiled;
        } else {
          ++cached;
        }
      }
    }
    std::fflush(stdout);
    Progress(i + 1, files->size(), failed);
  }
  std::printf("%d compiled, %d already cached, %d failed\n", compiled, cached, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server = "127.0.0.1:50051", device = "CPU", target, emit, optimize;
  std::string token_file, tls_ca, tls_cert, tls_key;
  bool verbose = false, allow_fma = false;
  int repeat = 1;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (arg == flag && i + 1 < argc) return std::string(argv[++i]);
      if (absl::StartsWith(arg, flag + "=")) return arg.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (auto v = value("--server"))
      server = *v;
    else if (auto v = value("--device"))
      device = *v;
    else if (auto v = value("--emit"))
      emit = *v;
    else if (auto v = value("--target"))
      target = *v;
    else if (auto v = value("--optimize"))
      optimize = *v;
    else if (auto v = value("--token_file"))
      token_file = *v;
    else if (auto v = value("--tls_ca"))
      tls_ca = *v;
    else if (auto v = value("--tls_cert"))
      tls_cert = *v;
    else if (auto v = value("--tls_key"))
      tls_key = *v;
    else if (auto v = value("--repeat"))
      repeat = std::max(1, std::atoi(v->c_str()));
    else if (arg == "--verbose" || arg == "-v")
      verbose = true;
    else if (arg == "--fma")
      allow_fma = true;
    else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      args.push_back(arg);
    }
  }
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (!emit.empty() && emit != "src" && emit != "bytes" && emit != "ptx") {
    std::fprintf(stderr, "uopctl: --emit takes src, bytes or ptx\n");
    return 2;
  }
  absl::StatusOr<uopd::v1::Optimization> optimization = OptimizationOf(optimize);
  if (!optimization.ok()) return Fail(optimization.status());
  optimization->set_allow_fma(allow_fma);
  uopd::ClientOptions options;
  // What `uopctl run` makes is the daemon's to free when uopctl exits, Ctrl-C included.
  options.session = true;
  if (const char* token = std::getenv("UOPD_TOKEN")) options.token = token;
  // Files, not flags, for secrets: a flag's value is visible to every user in `ps`.
  for (auto [path, out] :
       {std::pair{token_file, &options.token}, std::pair{tls_ca, &options.tls_root_certs},
        std::pair{tls_cert, &options.tls_cert_chain},
        std::pair{tls_key, &options.tls_private_key}}) {
    if (path.empty()) continue;
    auto text = uopd::ReadFileToString(path);
    if (!text.ok()) return Fail(text.status());
    *out = *text;
  }
  while (!options.token.empty() && std::isspace(static_cast<unsigned char>(options.token.back()))) {
    options.token.pop_back();
  }
  uopd::Client client(server, options);
  const std::string& command = args[0];
  if (command == "devices") return Devices(client);
  if (command == "compile" && args.size() == 2)
    return Compile(client, args[1], device, target, emit, *optimization);
  if (command == "run" && args.size() >= 2) {
    return Run(client, std::vector<std::string>(args.begin() + 1, args.end()), device,
               *optimization, verbose, repeat);
  }
  if (command == "cache" && args.size() == 2 && args[1] == "stats") return CacheStats(client);
  if (command == "cache" && args.size() >= 3 && args[1] == "warm") {
    std::vector<std::string> targets =
        absl::StrSplit(target.empty() ? device : target, ',', absl::SkipEmpty());
    return Warm(client, std::vector<std::string>(args.begin() + 2, args.end()), targets,
                *optimization);
  }
  std::fputs(kUsage, stderr);
  return 2;
}
