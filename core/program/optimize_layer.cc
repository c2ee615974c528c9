#include "core/program/optimize_layer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/cache/program_codec.h"
#include "core/util/large_stack.h"
#include "core/util/log.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// The opts of a search record that names `key_hex` and `ast_hash`; nullopt for anything else.
std::optional<std::vector<Opt>> RecordOpts(const CacheEntry& record, const std::string& key_hex,
                                           const std::string& ast_hash) {
  if (record.key != key_hex || record.ast_hash != ast_hash || !record.is_search_record()) {
    return std::nullopt;
  }
  return record.tuned_opts;
}

// What runs when timing could not decide among `contenders`: the model's choice (the first),
// unless its outputs were seen to differ (`known_wrong`) or, on a GPU, it has tensor cores that
// no timing checked against the kernel as written; then the first contender that is neither
// (GpuHeuristicContenders lists tinygrad's list without tensor cores), else the kernel as written.
std::vector<Opt> UntimedChoice(const std::vector<std::vector<Opt>>& contenders,
                               const std::vector<size_t>& known_wrong, bool gpu) {
  for (size_t i = 0; i < contenders.size(); ++i) {
    if (std::find(known_wrong.begin(), known_wrong.end(), i) != known_wrong.end()) continue;
    const bool tensor_cores = std::any_of(contenders[i].begin(), contenders[i].end(),
                                          [](const Opt& opt) { return opt.op == OptOp::kTc; });
    if (gpu && tensor_cores) continue;
    return contenders[i];
  }
  return {};
}

}  // namespace

absl::StatusOr<OptimizedKernel> OptimizeOnCompileStack(const std::shared_ptr<const KernelAst>& ast,
                                                       const OptTarget& target,
                                                       const OptimizeRequest& request) {
  return OnCompileStack([&] { return OptimizeKernel(ast, target, request); });
}

OptimizeRequest OptimizeLayer::Resolve(const OptimizeRequest& request) const {
  OptimizeRequest resolved = request;
  if (resolved.mode == OptMode::kDefault) resolved.mode = default_mode_;
  return resolved;
}

absl::StatusOr<OptimizeRequest> OptimizeLayer::ForDevice(
    const Device& device, const std::shared_ptr<const KernelAst>& ast,
    const OptimizeRequest& request, const StopFlag* stop) {
  const OptimizeRequest resolved = Resolve(request);
  if (resolved.mode == OptMode::kSearch) {
    return ResolveSearch(device, ast, stop, resolved.render);
  }
  if (resolved.mode == OptMode::kHeuristic) {
    return ResolveHeuristic(device, ast, stop, resolved.render);
  }
  return resolved;
}

OptimizeRequest OptimizeLayer::ForTarget(const std::string& base_device, const CompilerPair& pair,
                                         const KernelAst& ast, const OptimizeRequest& request) {
  OptimizeRequest resolved = Resolve(request);
  if (resolved.mode == OptMode::kSearch) {
    // No device to time on: what a search recorded for this target, or the heuristics.
    std::optional<std::vector<Opt>> recorded =
        FindSearchRecord(base_device, pair, ast, "search", resolved.render);
    return recorded.has_value()
               ? OptimizeRequest{OptMode::kOpts, *std::move(recorded), resolved.render}
               : OptimizeRequest{OptMode::kHeuristic, {}, resolved.render};
  }
  if (resolved.mode == OptMode::kHeuristic) {
    // No device to time on: what timing on a device of this target chose, if any.
    if (std::optional<std::vector<Opt>> timed =
            FindSearchRecord(base_device, pair, ast, "heuristic", resolved.render)) {
      return OptimizeRequest{OptMode::kOpts, *std::move(timed), resolved.render};
    }
  }
  return resolved;
}

absl::StatusOr<std::vector<Opt>> OptimizeLayer::ChooseOpts(
    const std::shared_ptr<const KernelAst>& ast, const OptTarget& target,
    const OptimizeRequest& request, const std::string& memo_key, const StopFlag* stop,
    std::optional<OptimizedKernel>* optimized) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = chosen_.find(memo_key); it != chosen_.end()) return it->second;
  }
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
  UOPD_ASSIGN_OR_RETURN(*optimized, OptimizeOnCompileStack(ast, target, request));
  absl::MutexLock lock(&mu_);
  // Bounded by starting over: a forgotten choice is only made again, never wrong.
  if (chosen_.size() >= max_memo_) chosen_.clear();
  chosen_.emplace(memo_key, (*optimized)->applied);
  return (*optimized)->applied;
}

std::optional<std::vector<Opt>> OptimizeLayer::FindSearchRecord(const std::string& base_device,
                                                                const CompilerPair& pair,
                                                                const KernelAst& ast,
                                                                const std::string& kind,
                                                                const RenderOptions& render) {
  const std::string key_hex = KeyFor(base_device, pair, ast.hash, kind, render.FloatMode()).Hex();
  std::optional<std::string> bytes = cache_.GetSerialized(key_hex);
  if (!bytes.has_value()) return std::nullopt;
  absl::StatusOr<CacheEntry> record = ParseCacheEntry(*bytes);
  if (!record.ok()) return std::nullopt;
  std::optional<std::vector<Opt>> opts = RecordOpts(*record, key_hex, ast.hash);
  // A search that ran with tensor cores, read by a daemon running without them
  // (--tensor_cores=false): its choice no longer applies here.
  if (opts.has_value() && !TensorCoresEnabled() &&
      std::any_of(opts->begin(), opts->end(),
                  [](const Opt& opt) { return opt.op == OptOp::kTc; })) {
    return std::nullopt;
  }
  return opts;
}

absl::StatusOr<OptimizeRequest> OptimizeLayer::ResolveSearch(
    const Device& device, const std::shared_ptr<const KernelAst>& ast, const StopFlag* stop,
    const RenderOptions& render) {
  OptimizeRequest heuristic;
  heuristic.mode = OptMode::kHeuristic;
  heuristic.render = render;
  if (IsAlreadyOptimized(*ast)) return heuristic;  // run as given, as under the heuristics
  const CompilerPair& pair = device.compilers().front();
  const CacheKey key =
      KeyFor(device.spec().base_device_key(), pair, ast->hash, "search", render.FloatMode());
  const std::string key_hex = key.Hex();
  SearchOptions options = search_;
  options.stop = stop;
  options.render = render;
  auto search = [&]() -> absl::StatusOr<CacheEntry> {
    UOPD_ASSIGN_OR_RETURN(SearchResult found, SearchKernelOpts(device, ast, options));
    if (found.stopped) return absl::CancelledError("the call ended during the search");
    CacheEntry record;
    record.key = key_hex;
    record.ast_hash = ast->hash;
    record.tuned_opts = found.opts;
    record.search = SearchSummary{found.seconds, found.heuristic_seconds, found.candidates,
                                  absl::ToDoubleSeconds(options.budget), found.converged};
    Log(LogLevel::kInfo, "searched a kernel",
        {{"kernel", ast->DefaultName()},
         {"device", device.name()},
         {"opts", OptsToString(found.opts)},
         {"us", absl::StrCat(found.seconds * 1e6)},
         {"heuristic_us", absl::StrCat(found.heuristic_seconds * 1e6)},
         {"candidates", absl::StrCat(found.candidates)},
         {"ended", found.note}});
    return record;
  };
  for (int attempt = 0; attempt < 2; ++attempt) {
    UOPD_ASSIGN_OR_RETURN(CacheLookup lookup, cache_.GetOrCompile(key, search, stop));
    const CacheEntry& record = *lookup.entry;
    std::optional<std::vector<Opt>> opts = RecordOpts(record, key_hex, ast->hash);
    const bool cut_short = !record.search.converged && record.search.budget_seconds * 2 <=
                                                           absl::ToDoubleSeconds(options.budget);
    if (opts.has_value() && OptimizeKernel(ast,
                                           OptTargetFor(device.spec().base_device_key(),
                                                        pair.compiler->Target(), device.threads()),
                                           OptimizeRequest{OptMode::kOpts, *opts})
                                .ok()) {
      if (!cut_short || lookup.answered_by == "compiled" || attempt > 0) {
        return OptimizeRequest{OptMode::kOpts, *std::move(opts), render};
      }
    } else {
      Log(LogLevel::kWarning, "dropping a search record that does not apply",
          {{"key", key_hex}, {"tier", lookup.answered_by}});
    }
    cache_.Invalidate(key_hex);  // unusable, or a shorter search than this call may run
  }
  return heuristic;
}

void OptimizeLayer::KeepTimedWinner(const std::string& base_device, const CompilerPair& pair,
                                    const KernelAst& ast, const TournamentResult& timed,
                                    const RenderOptions& render, const StopFlag* stop) {
  if (timed.winner_kernel.bytes.empty()) return;
  // The winner was compiled to be timed: kept under its compile key, the compile that follows
  // the choice is a hit instead of the same program compiled again (a third of a timed kernel's
  // first-run cost). This daemon compiled these bytes itself, as any entry it stores.
  const CacheKey key =
      KeyFor(base_device, pair, ast.hash, OptsToString(timed.winner_applied), render.FloatMode());
  const std::string key_hex = key.Hex();
  auto compiled = [&]() -> absl::StatusOr<CacheEntry> {
    CacheEntry entry;
    entry.kernel = timed.winner_kernel;
    entry.key = key_hex;
    entry.ast_hash = key.ast_hash;
    entry.spec = timed.winner_spec;
    entry.spec.ast = nullptr;
    return entry;
  };
  (void)cache_.GetOrCompile(key, compiled, stop);  // a failure only costs the compile it saves
}

absl::StatusOr<OptimizeRequest> OptimizeLayer::ResolveHeuristic(
    const Device& device, const std::shared_ptr<const KernelAst>& ast, const StopFlag* stop,
    const RenderOptions& render) {
  const OptimizeRequest model{OptMode::kHeuristic, {}, render};
  const CompilerPair& pair = device.compilers().front();
  const OptTarget target =
      OptTargetFor(device.spec().base_device_key(), pair.compiler->Target(), device.threads());
  const std::string memo_key =
      absl::StrCat(device.spec().base_device_key(), "/", pair.compiler->Target(), "/",
                   device.threads(), "/", ast->hash, "/", render.FloatMode());
  auto explicit_opts = [&](std::vector<Opt> opts) {
    return OptimizeRequest{OptMode::kOpts, std::move(opts), render};
  };
  auto decided = [&](std::optional<std::vector<Opt>> opts) -> OptimizeRequest {
    absl::MutexLock lock(&mu_);
    // Bounded by starting over: a forgotten decision is only made again.
    if (resolved_heuristic_.size() >= max_memo_) resolved_heuristic_.clear();
    resolved_heuristic_[memo_key] = opts;
    return opts.has_value() ? explicit_opts(*std::move(opts)) : model;
  };
  {
    absl::MutexLock lock(&mu_);
    if (auto it = resolved_heuristic_.find(memo_key); it != resolved_heuristic_.end()) {
      return it->second.has_value() ? explicit_opts(*it->second) : model;
    }
  }
  // The ranking is done once here: its choice goes on as explicit opts, so the compile does not
  // rank the candidates again.
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "ranking the heuristics' candidates"));
  std::vector<std::vector<Opt>> contenders = HeuristicContendersFor(ast, target);
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "timing the heuristics' candidates"));
  if (contenders.empty()) return decided(std::nullopt);
  if (contenders.size() == 1) return decided(std::move(contenders.front()));
  const CacheKey key =
      KeyFor(device.spec().base_device_key(), pair, ast->hash, "heuristic", render.FloatMode());
  const std::string key_hex = key.Hex();
  SearchOptions options = search_;
  options.stop = stop;
  options.render = render;
  // A GPU's contenders are lowerings no model has checked on this GPU (tensor cores, vector
  // loads, shared memory): one whose outputs differ is not chosen, and says so.
  options.verify_candidates = target.has_local;
  std::vector<size_t> known_wrong;  // contenders whose outputs differed (this call's timing)
  auto time = [&]() -> absl::StatusOr<CacheEntry> {
    const absl::Time started = absl::Now();
    UOPD_ASSIGN_OR_RETURN(TournamentResult timed,
                          TimeOptCandidates(device, ast, contenders, options));
    if (timed.stopped) return absl::CancelledError("the call ended while timing candidates");
    known_wrong = timed.differed;
    for (size_t differed : timed.differed) {
      Log(LogLevel::kError, "a heuristic candidate's outputs differ from the kernel as written",
          {{"kernel", ast->DefaultName()},
           {"device", device.name()},
           {"opts", OptsToString(contenders[differed])}});
    }
    CacheEntry record;
    record.key = key_hex;
    record.ast_hash = ast->hash;
    const double seconds = timed.seconds[timed.winner];
    if (!std::isinf(seconds)) {
      record.tuned_opts = contenders[timed.winner];
      KeepTimedWinner(device.spec().base_device_key(), pair, *ast, timed, render, stop);
    } else if (timed.out_of_time) {
      // Nothing learned yet: a later call, with more time, times them.
      return absl::DeadlineExceededError("the time to time candidates ran out");
    } else if (!timed.differed.empty()) {
      // Every contender that ran computed something else: the kernel as written is the one
      // program known to be right on this device.
      record.tuned_opts = {};
    } else {
      return absl::FailedPreconditionError("no candidate ran on the device");
    }
    const double model_seconds = std::isinf(timed.seconds[0]) ? 0 : timed.seconds[0];
    record.search = SearchSummary{std::isinf(seconds) ? 0 : seconds, model_seconds,
                                  static_cast<int>(contenders.size()), 0, true};
    Log(LogLevel::kInfo, "timed the heuristics' candidates",
        {{"kernel", ast->DefaultName()},
         {"device", device.name()},
         {"opts", OptsToString(record.tuned_opts)},
         {"us", absl::StrCat(seconds * 1e6)},
         {"model_choice_us", absl::StrCat(model_seconds * 1e6)},
         {"candidates", absl::StrCat(contenders.size())},
         {"took_ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - started))}});
    return record;
  };
  absl::StatusOr<CacheLookup> lookup = cache_.GetOrCompile(key, time, stop);
  if (!lookup.ok()) {
    if (stop != nullptr && stop->stopped()) return lookup.status();
    const std::vector<Opt> fallback = UntimedChoice(contenders, known_wrong, target.has_local);
    // Nothing can be timed here (no candidate runs, or the kernel's buffers exceed the search's
    // scratch bound): this daemon does not try again. Otherwise (the caller's quota or time) a
    // later call may time.
    if (absl::IsFailedPrecondition(lookup.status())) return decided(fallback);
    return explicit_opts(fallback);
  }
  std::optional<std::vector<Opt>> opts = RecordOpts(*lookup->entry, key_hex, ast->hash);
  if (!opts.has_value() ||
      !OptimizeKernel(ast, target, OptimizeRequest{OptMode::kOpts, *opts}).ok()) {
    Log(LogLevel::kWarning, "dropping a timed choice that does not apply",
        {{"key", key_hex}, {"tier", lookup->answered_by}});
    cache_.Invalidate(key_hex);
    return explicit_opts(contenders.front());
  }
  return decided(std::move(opts));
}

}  // namespace uopd
