// Every corpus kernel on the CPU with the heuristics against as written (issue 12: "no corpus
// kernel slower than before beyond noise"). For each case (one kernel) and each kernel of a
// plan: its outputs with the heuristics are checked against tinygrad's (RunCorpusEntry, the
// corpus tolerance), then the two loaded programs (OptMode::kNone and OptMode::kHeuristic) are
// timed through Program::Execute on the same bound buffers, interleaved: each sample runs the
// kernel back to back until it has run for at least --min_ms; --samples samples per mode and
// round, --rounds rounds over the whole corpus (a kernel slower in every round is slower beyond
// what the machine did during one round). Prints the slowest kernels (heuristic/none ratio), a
// summary (kernels the heuristics left as written are the same code: their ratios are the noise
// floor) and the worst --worst kernels with the opts the heuristics chose. Exits 1 when some
// kernel's outputs with the heuristics are outside the corpus tolerance.
//
//   corpus_opt_bench [--samples 9] [--rounds 2] [--min_ms 2] [--worst 10] [--threshold 1.10]
//                    [--all] [--only name1,name2] [PATH...]   (default: tests/corpus/cases)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_device.h"
#include "bench/bench_util.h"
#include "bench/corpus_binding.h"
#include "core/corpus/corpus_file.h"
#include "core/corpus/corpus_runner.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/optimize.h"
#include "core/plan/execution_plan.h"
#include "core/program/caching_program_source.h"
#include "core/util/status_macros.h"

namespace {

using uopd::bench::Bind;
using uopd::bench::Build;
using uopd::bench::Built;
using uopd::bench::Percentile;
using uopd::bench::SecondsOf;

// One kernel, loaded as written and with the heuristics, ready to call on shared buffers.
struct Item {
  std::string name;
  std::string opts;                 // what the heuristics applied
  std::shared_ptr<Built> built[2];  // as written, heuristics
  int k = 0;                        // kernel index in both plans
  int reps[2] = {1, 1};             // calls per sample
  std::vector<double> samples[2];   // seconds per call, all rounds
  // Heuristic / as written, of each round's fastest samples: the other load of a shared
  // machine only adds time (preemption, cache misses), so the fastest of several samples is the
  // kernel's own time; medians keep the noise of a round where the machine was busy.
  std::vector<double> round_ratio;

  void Call(int m) const {
    if (!built[m]->Call(k)) std::abort();
  }
  double none_s() const { return Percentile(samples[0], 0.5); }
  double heur_s() const { return Percentile(samples[1], 0.5); }
  double median_ratio() const { return heur_s() / none_s(); }
  // Geometric mean over rounds.
  double ratio() const {
    double log_sum = 0;
    for (double r : round_ratio) log_sum += std::log(r);
    return std::exp(log_sum / round_ratio.size());
  }
  bool SlowerEveryRound(double threshold) const {
    return std::all_of(round_ratio.begin(), round_ratio.end(),
                       [&](double r) { return r > threshold; });
  }
};

struct Options {
  int samples = 9, worst = 10, rounds = 2;
  double min_ms = 2, threshold = 1.10;
  bool all = false;
  std::vector<std::string> paths, only;
};

// The command line; false after printing the usage.
bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--samples" && i + 1 < argc) {
      o->samples = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--min_ms" && i + 1 < argc) {
      o->min_ms = std::atof(argv[++i]);
    } else if (arg == "--rounds" && i + 1 < argc) {
      o->rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--worst" && i + 1 < argc) {
      o->worst = std::atoi(argv[++i]);
    } else if (arg == "--threshold" && i + 1 < argc) {
      o->threshold = std::atof(argv[++i]);
    } else if (arg == "--only" && i + 1 < argc) {
      o->only = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
    } else if (arg == "--all") {
      o->all = true;
    } else if (absl::StartsWith(arg, "--")) {
      std::fprintf(stderr,
                   "usage: corpus_opt_bench [--samples N] [--rounds N] [--min_ms MS] [--worst N] "
                   "[--threshold R] [--all] [--only a,b] [PATH...]\n");
      return false;
    } else {
      o->paths.push_back(arg);
    }
  }
  if (o->paths.empty()) o->paths.push_back("tests/corpus/cases");
  return true;
}

struct Corpus {
  std::vector<Item> items;
  std::vector<std::string> mismatches, errors;
  int cases = 0, plans = 0;
};

// Each corpus kernel checked with the heuristics against tinygrad's outputs, then loaded as
// written and with the heuristics, with its calls per sample measured.
Corpus CollectItems(uopd::Device& cpu, uopd::CachingProgramSource& source, uopd::ThreadPool& pool,
                    const std::vector<std::string>& files, const Options& o) {
  Corpus c;
  std::vector<Item>& items = c.items;
  std::vector<std::string>& mismatches = c.mismatches;
  std::vector<std::string>& errors = c.errors;
  const std::vector<std::string>& only = o.only;
  const double min_ms = o.min_ms;

  for (const std::string& file : files) {
    auto entry = uopd::LoadCorpusFile(file);
    if (!entry.ok()) {
      errors.push_back(absl::StrCat(file, ": ", entry.status().ToString()));
      continue;
    }
    if (!only.empty() && std::none_of(only.begin(), only.end(), [&](const std::string& o) {
          return absl::StrContains(entry->name(), o);
        })) {
      continue;
    }
    (entry->is_plan ? c.plans : c.cases)++;
    // Outputs with the heuristics against tinygrad's, under the corpus tolerance.
    uopd::CorpusRunOptions check;
    check.source = &source;
    check.pool = &pool;
    check.optimization.mode = uopd::OptMode::kHeuristic;
    if (absl::Status s = uopd::RunCorpusEntry(cpu, *entry, check); !s.ok()) {
      check.optimization.mode = uopd::OptMode::kNone;
      absl::Status as_written = uopd::RunCorpusEntry(cpu, *entry, check);
      std::string line =
          absl::StrCat(entry->name(), ": ", s.ToString().substr(0, 200),
                       as_written.ok() ? " (as written: OK)" : " (fails as written too)");
      std::printf("!!! HEURISTICS: %s\n", line.c_str());
      std::fflush(stdout);
      mismatches.push_back(line);
      continue;
    }
    auto bound = Bind(cpu, *entry);
    if (!bound.ok()) {
      errors.push_back(absl::StrCat(entry->name(), ": ", bound.status().ToString()));
      continue;
    }
    auto none = Build(cpu, source, &pool, *bound, uopd::OptMode::kNone);
    auto heur = Build(cpu, source, &pool, *bound, uopd::OptMode::kHeuristic);
    if (!none.ok() || !heur.ok()) {
      errors.push_back(absl::StrCat(entry->name(), ": ",
                                    (!none.ok() ? none.status() : heur.status()).ToString()));
      continue;
    }
    auto shared_none = std::make_shared<Built>(*std::move(none));
    auto shared_heur = std::make_shared<Built>(*std::move(heur));
    for (int k = 0; k < static_cast<int>(shared_none->plan->kernels().size()); ++k) {
      Item item;
      item.name = entry->is_plan ? absl::StrCat(entry->name(), "#", k) : entry->name();
      item.opts = uopd::OptsToString(shared_heur->plan->kernels()[k].program->applied);
      item.built[0] = shared_none;
      item.built[1] = shared_heur;
      item.k = k;
      // Calls per sample: enough for min_ms, from warm runs of each.
      for (int m = 0; m < 2; ++m) {
        item.Call(m);
        double once = std::max(1e-8, SecondsOf([&] { item.Call(m); }));
        double few = SecondsOf([&] {
          for (int r = 0; r < 5; ++r) item.Call(m);
        });
        once = std::min(once, few / 5);
        item.reps[m] = static_cast<int>(std::clamp(std::ceil(min_ms * 1e-3 / once), 1.0, 1e7));
      }
      items.push_back(std::move(item));
    }
  }
  return c;
}

// Rounds over every kernel, one after the other: a kernel slower in every round is slower
// beyond what the machine did during one of them.
void TimeRounds(std::vector<Item>& items, const Options& o) {
  const int rounds = o.rounds, samples = o.samples;
  for (int round = 0; round < rounds; ++round) {
    for (Item& item : items) {
      std::vector<double> t[2];
      for (int s = 0; s < samples; ++s) {
        for (int i = 0; i < 2; ++i) {
          const int m = (s + i) % 2;  // alternate which mode goes first
          t[m].push_back(SecondsOf([&] {
                           for (int r = 0; r < item.reps[m]; ++r) item.Call(m);
                         }) /
                         item.reps[m]);
        }
      }
      item.round_ratio.push_back(*std::min_element(t[1].begin(), t[1].end()) /
                                 *std::min_element(t[0].begin(), t[0].end()));
      for (int m = 0; m < 2; ++m)
        item.samples[m].insert(item.samples[m].end(), t[m].begin(), t[m].end());
    }
  }
}

// The slowest kernels, the summary by kind and the worst and best kernels, slowest first.
void PrintReport(std::vector<Item>& items, const Corpus& c, int threads, const Options& o) {
  const int cases = c.cases, plans = c.plans, rounds = o.rounds, samples = o.samples,
            worst = o.worst;
  const double min_ms = o.min_ms, threshold = o.threshold;
  const bool all = o.all;
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.ratio() > b.ratio(); });
  auto print_row = [&](const Item& r) {
    std::string per_round;
    for (double x : r.round_ratio)
      absl::StrAppend(&per_round, per_round.empty() ? "" : " ", absl::StrFormat("%.2f", x));
    std::printf("%-40s %8.3f %8.3f %6.2f %6.2f%s %-11s %s\n", r.name.c_str(), r.none_s() * 1e6,
                r.heur_s() * 1e6, r.median_ratio(), r.ratio(),
                r.SlowerEveryRound(threshold) ? "*" : " ", per_round.c_str(),
                r.opts.empty() ? "(none)" : r.opts.c_str());
  };
  auto header = [] {
    std::printf("%-40s %8s %8s %6s %7s %-11s %s\n", "kernel", "none us", "heur us", "med r",
                "min r", "min r/round", "opts the heuristics applied");
  };
  std::printf(
      "%d cases, %d plans, %zu kernels timed on CPU (%d threads): %d rounds over the corpus, "
      "each %d interleaved samples per kernel and mode of >= %.1f ms of back-to-back Execute "
      "calls\n"
      "none/heur us: median of all samples; med r: their ratio (heuristics / as written); min r: "
      "the same of each round's fastest samples, geometric mean over rounds; * = min r above "
      "%.2f in every round\n",
      cases, plans, items.size(), threads, rounds, samples, min_ms, threshold);
  if (all) {
    header();
    for (const Item& r : items) print_row(r);
    std::printf("\n");
  }
  std::printf("\nkernels slower with the heuristics by more than %.0f%% (med r or min r):\n",
              (threshold - 1) * 100);
  header();
  for (const Item& r : items) {
    if (r.ratio() > threshold || r.median_ratio() > threshold) print_row(r);
  }

  auto summarize = [&](const char* what, const char* estimator, auto&& keep, auto&& ratio_of) {
    double log_sum = 0;
    int count = 0, over10 = 0, over25 = 0, faster10 = 0, every = 0;
    std::vector<double> ratios;
    for (const Item& r : items) {
      if (!keep(r)) continue;
      const double ratio = ratio_of(r);
      ++count;
      log_sum += std::log(ratio);
      ratios.push_back(ratio);
      over10 += ratio > 1.10;
      over25 += ratio > 1.25;
      faster10 += ratio < 1 / 1.10;
      every += r.SlowerEveryRound(threshold);
    }
    if (count == 0) return;
    std::printf("%-34s %-5s %5d %8.3f %8.3f %6.3f %6.3f %6d %6d %6d %8d\n", what, estimator, count,
                std::exp(log_sum / count), Percentile(ratios, 0.5), Percentile(ratios, 0.1),
                Percentile(ratios, 0.9), over10, over25, faster10, every);
  };
  std::printf("\nheuristics / as written, per kernel (>%.2f*: min r above it in every round)\n",
              threshold);
  std::printf("%-34s %-5s %5s %8s %8s %6s %6s %6s %6s %6s %8s\n", "kernels", "ratio", "count",
              "geomean", "median", "p10", "p90", ">1.10", ">1.25", "<0.91",
              absl::StrFormat(">%.2f*", threshold).c_str());
  auto any = [](const Item&) { return true; };
  auto with_opts = [](const Item& r) { return !r.opts.empty(); };
  auto without = [](const Item& r) { return r.opts.empty(); };
  auto min_r = [](const Item& r) { return r.ratio(); };
  auto med_r = [](const Item& r) { return r.median_ratio(); };
  summarize("all", "min r", any, min_r);
  summarize("all", "med r", any, med_r);
  summarize("heuristics applied opts", "min r", with_opts, min_r);
  summarize("heuristics applied opts", "med r", with_opts, med_r);
  summarize("no opts applied (same code: noise)", "min r", without, min_r);
  summarize("no opts applied (same code: noise)", "med r", without, med_r);
  std::printf("\nworst %d (by min r):\n", worst);
  header();
  for (int i = 0; i < worst && i < static_cast<int>(items.size()); ++i) print_row(items[i]);
  std::printf("\nbest 5 (by min r):\n");
  header();
  for (int i = 0; i < 5 && i < static_cast<int>(items.size()); ++i)
    print_row(items[items.size() - 1 - i]);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, &options)) return 2;
  auto files = uopd::ListCorpusFiles(options.paths);
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", files.status().ToString().c_str());
    return 2;
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  uopd::ThreadPool pool(cores - 1);
  auto device = uopd::CreateCpuDevice(&pool);
  if (!device.ok()) return 1;
  uopd::Device& cpu = **device;
  uopd::KernelCache cache;
  uopd::CachingProgramSource source(cache);
  Corpus corpus = CollectItems(cpu, source, pool, *files, options);
  TimeRounds(corpus.items, options);
  PrintReport(corpus.items, corpus, cpu.threads(), options);
  const std::vector<std::string>& mismatches = corpus.mismatches;
  const std::vector<std::string>& errors = corpus.errors;
  std::printf("\noutputs with the heuristics vs. tinygrad's (corpus tolerance): %zu mismatches\n",
              mismatches.size());
  for (const std::string& m : mismatches) std::printf("  !!! %s\n", m.c_str());
  if (!errors.empty()) {
    std::printf("errors (not timed): %zu\n", errors.size());
    for (const std::string& e : errors) std::printf("  %s\n", e.substr(0, 300).c_str());
  }
  return mismatches.empty() ? 0 : 1;
}
