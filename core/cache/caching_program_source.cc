#include "core/cache/caching_program_source.h"

#include "absl/strings/str_cat.h"
#include "core/cache/program_codec.h"
#include "core/util/large_stack.h"
#include "core/util/log.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// Renders `ast` with `pair`'s renderer, on a stack deep enough for the IR's depth limit.
absl::StatusOr<ProgramSpec> Render(const CompilerPair& pair,
                                   const std::shared_ptr<const KernelAst>& ast,
                                   const RenderOptions& options) {
  return OnCompileStack([&] { return pair.renderer->Render(ast, ast->DefaultName(), options); });
}

// OptimizeKernel on a compile thread (core/util/large_stack.h): its time grows with the AST.
absl::StatusOr<OptimizedKernel> Optimize(const std::shared_ptr<const KernelAst>& ast,
                                         const OptTarget& target, const OptimizeRequest& request) {
  return OnCompileStack([&] { return OptimizeKernel(ast, target, request); });
}

// The cache entry for `spec` compiled by `pair`, naming the key and AST it belongs to.
absl::StatusOr<CacheEntry> CompileEntry(const CompilerPair& pair, const ProgramSpec& spec,
                                        const CacheKey& key, const std::string& key_hex,
                                        const StopFlag* stop) {
  CacheEntry entry;
  UOPD_ASSIGN_OR_RETURN(entry.kernel, pair.compiler->Compile(spec, CompileOptions{stop}));
  entry.key = key_hex;
  entry.ast_hash = key.ast_hash;
  entry.spec = spec;
  entry.spec.ast = nullptr;  // the entry's program is what its bytes say, not the AST's
  return entry;
}

}  // namespace

OptimizeRequest CachingProgramSource::Resolve(const OptimizeRequest& request) const {
  OptimizeRequest resolved = request;
  if (resolved.mode == OptMode::kDefault) resolved.mode = default_mode_;
  return resolved;
}

namespace {

// The opts of a search record that names `key_hex` and `ast_hash`; nullopt for anything else.
std::optional<std::vector<Opt>> RecordOpts(const CacheEntry& record, const std::string& key_hex,
                                           const std::string& ast_hash) {
  if (record.key != key_hex || record.ast_hash != ast_hash || !record.is_search_record()) {
    return std::nullopt;
  }
  return record.tuned_opts;
}

}  // namespace

std::optional<std::vector<Opt>> CachingProgramSource::FindSearchRecord(
    const std::string& base_device, const CompilerPair& pair, const KernelAst& ast,
    const std::string& kind, const RenderOptions& render) {
  const std::string key_hex = KeyFor(base_device, pair, ast.hash, kind, render.FloatMode()).Hex();
  std::optional<std::string> bytes = cache_.GetSerialized(key_hex);
  if (!bytes.has_value()) return std::nullopt;
  absl::StatusOr<CacheEntry> record = ParseCacheEntry(*bytes);
  if (!record.ok()) return std::nullopt;
  return RecordOpts(*record, key_hex, ast.hash);
}

absl::StatusOr<OptimizeRequest> CachingProgramSource::ResolveSearch(
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

void CachingProgramSource::KeepTimedWinner(const std::string& base_device, const CompilerPair& pair,
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

absl::StatusOr<OptimizeRequest> CachingProgramSource::ResolveHeuristic(
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
    if (resolved_heuristic_.size() >= max_chosen_) resolved_heuristic_.clear();
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
  auto time = [&]() -> absl::StatusOr<CacheEntry> {
    const absl::Time started = absl::Now();
    UOPD_ASSIGN_OR_RETURN(TournamentResult timed,
                          TimeOptCandidates(device, ast, contenders, options));
    if (timed.stopped) return absl::CancelledError("the call ended while timing candidates");
    KeepTimedWinner(device.spec().base_device_key(), pair, *ast, timed, render, stop);
    CacheEntry record;
    record.key = key_hex;
    record.ast_hash = ast->hash;
    record.tuned_opts = contenders[timed.winner];
    record.search = SearchSummary{timed.seconds[timed.winner], timed.seconds[0],
                                  static_cast<int>(contenders.size()), 0, true};
    Log(LogLevel::kInfo, "timed the heuristics' candidates",
        {{"kernel", ast->DefaultName()},
         {"device", device.name()},
         {"opts", OptsToString(record.tuned_opts)},
         {"us", absl::StrCat(timed.seconds[timed.winner] * 1e6)},
         {"model_choice_us", absl::StrCat(timed.seconds[0] * 1e6)},
         {"candidates", absl::StrCat(contenders.size())},
         {"took_ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - started))}});
    return record;
  };
  absl::StatusOr<CacheLookup> lookup = cache_.GetOrCompile(key, time, stop);
  if (!lookup.ok()) {
    // Timing needs scratch memory and the call's time; without them the model decides (for
    // this call only: a later one may time).
    if (stop != nullptr && stop->stopped()) return lookup.status();
    return explicit_opts(contenders.front());
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

absl::StatusOr<CompileResult> CachingProgramSource::Compile(const Device& device,
                                                            std::shared_ptr<const KernelAst> ast,
                                                            const OptimizeRequest& optimization,
                                                            const StopFlag* stop) {
  OptimizeRequest request = Resolve(optimization);
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
  if (request.mode == OptMode::kSearch) {
    UOPD_ASSIGN_OR_RETURN(request, ResolveSearch(device, ast, stop, request.render));
  } else if (request.mode == OptMode::kHeuristic) {
    UOPD_ASSIGN_OR_RETURN(request, ResolveHeuristic(device, ast, stop, request.render));
  }
  return CompileFor(device.spec().base_device_key(), device.compilers().front(), device.threads(),
                    std::move(ast), request, stop);
}

absl::StatusOr<CompileResult> CachingProgramSource::Compile(const std::string& base_device,
                                                            const CompilerPair& pair,
                                                            std::shared_ptr<const KernelAst> ast,
                                                            const OptimizeRequest& optimization,
                                                            const StopFlag* stop) {
  return CompileFor(base_device, pair, 1, std::move(ast), optimization, stop);
}

absl::StatusOr<CompileResult> CachingProgramSource::CompileFor(const std::string& base_device,
                                                               const CompilerPair& pair,
                                                               int threads,
                                                               std::shared_ptr<const KernelAst> ast,
                                                               const OptimizeRequest& optimization,
                                                               const StopFlag* stop) {
  OptimizeRequest request = Resolve(optimization);
  if (request.mode == OptMode::kSearch) {
    // No device to time on: what a search recorded for this target, or the heuristics.
    std::optional<std::vector<Opt>> recorded =
        FindSearchRecord(base_device, pair, *ast, "search", request.render);
    request = recorded.has_value()
                  ? OptimizeRequest{OptMode::kOpts, *std::move(recorded), request.render}
                  : OptimizeRequest{OptMode::kHeuristic, {}, request.render};
  } else if (request.mode == OptMode::kHeuristic) {
    // No device to time on: what timing on a device of this target chose, if any.
    if (std::optional<std::vector<Opt>> timed =
            FindSearchRecord(base_device, pair, *ast, "heuristic", request.render)) {
      request = OptimizeRequest{OptMode::kOpts, *std::move(timed), request.render};
    }
  }
  const OptTarget target = OptTargetFor(base_device, pair.compiler->Target(), threads);
  // The opts are part of the cache key, so a hit needs them first; the heuristics that choose
  // them cost more than the rest of a memory hit, and choose the same for the same AST.
  const std::string chosen_key = absl::StrCat(base_device, "/", pair.compiler->Target(), "/",
                                              threads, "/", ast->hash, "/", request.Key());
  std::optional<OptimizedKernel> optimized;
  std::optional<std::vector<Opt>> applied = ChosenOpts(chosen_key);
  if (!applied.has_value()) {
    UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
    UOPD_ASSIGN_OR_RETURN(optimized, Optimize(ast, target, request));
    applied = optimized->applied;
    RememberChosenOpts(chosen_key, optimized->applied);
  }
  CompileResult result;
  result.applied = *std::move(applied);
  result.key = KeyFor(base_device, pair, ast->hash, OptsToString(result.applied),
                      request.render.FloatMode());
  result.key_hex = result.key.Hex();
  auto compile = [&]() -> absl::StatusOr<CacheEntry> {
    if (!optimized.has_value()) {
      UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
      UOPD_ASSIGN_OR_RETURN(optimized, Optimize(ast, target, request));
    }
    UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "rendering"));
    UOPD_ASSIGN_OR_RETURN(ProgramSpec spec, Render(pair, optimized->ast, request.render));
    UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "compiling"));
    return CompileEntry(pair, spec, result.key, result.key_hex, stop);
  };
  UOPD_ASSIGN_OR_RETURN(result.lookup, cache_.GetOrCompile(result.key, compile, stop));
  return result;
}

std::optional<std::vector<Opt>> CachingProgramSource::ChosenOpts(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = chosen_.find(key);
  if (it == chosen_.end()) return std::nullopt;
  return it->second;
}

void CachingProgramSource::RememberChosenOpts(const std::string& key,
                                              const std::vector<Opt>& opts) {
  absl::MutexLock lock(&mu_);
  // Bounded by starting over: a forgotten choice is only made again, never wrong.
  if (chosen_.size() >= max_chosen_) chosen_.clear();
  chosen_.emplace(key, opts);
}

absl::StatusOr<std::shared_ptr<const LoadedProgram>> CachingProgramSource::Get(
    Device& device, std::shared_ptr<const KernelAst> ast, const OptimizeRequest& optimization,
    const StopFlag* stop) {
  const OptimizeRequest request = Resolve(optimization);
  const std::string memo_key = absl::StrCat(device.name(), "/", ast->hash, "/", request.Key());
  {
    absl::MutexLock lock(&mu_);
    if (auto it = index_.find(memo_key); it != index_.end()) {
      loaded_.splice(loaded_.begin(), loaded_, it->second);
      return it->second->second;
    }
  }
  const CompilerPair& pair = device.compilers().front();
  OptimizeRequest concrete = request;
  if (concrete.mode == OptMode::kSearch) {
    UOPD_ASSIGN_OR_RETURN(concrete, ResolveSearch(device, ast, stop, request.render));
  } else if (concrete.mode == OptMode::kHeuristic) {
    UOPD_ASSIGN_OR_RETURN(concrete, ResolveHeuristic(device, ast, stop, request.render));
  }
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
  UOPD_ASSIGN_OR_RETURN(OptimizedKernel optimized,
                        OptimizeKernel(ast,
                                       OptTargetFor(device.spec().base_device_key(),
                                                    pair.compiler->Target(), device.threads()),
                                       concrete));
  const CacheKey key = KeyFor(device.spec().base_device_key(), pair, ast->hash,
                              OptsToString(optimized.applied), request.render.FloatMode());
  const std::string key_hex = key.Hex();
  // Kernels run with the metadata of their own AST (buffer sizes, launch dimensions, variable
  // bounds), never with what a cache entry says: an entry's bytes are the only thing taken
  // from it, and an entry whose metadata disagrees with the AST is not used.
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "rendering"));
  UOPD_ASSIGN_OR_RETURN(ProgramSpec spec, Render(pair, optimized.ast, request.render));
  spec.ast = optimized.ast;
  auto compile = [&]() { return CompileEntry(pair, spec, key, key_hex, stop); };
  std::shared_ptr<Program> program;
  std::shared_ptr<const CompiledKernel> compiled;
  for (int attempt = 0;; ++attempt) {
    UOPD_ASSIGN_OR_RETURN(CacheLookup lookup, cache_.GetOrCompile(key, compile, stop));
    absl::Status usable = absl::OkStatus();
    if (lookup.entry->is_search_record() || !SameProgramMetadata(lookup.entry->spec, spec)) {
      usable = absl::DataLossError("its metadata does not match the kernel's AST");
    } else {
      auto bytes = std::make_shared<const CompiledKernel>(lookup.entry->kernel);
      absl::StatusOr<std::shared_ptr<Program>> loaded = device.runtime().Load(*bytes, spec);
      if (loaded.ok()) {
        program = *std::move(loaded);
        compiled = std::move(bytes);
        break;
      }
      usable = loaded.status();
    }
    if (lookup.answered_by == "compiled" || attempt > 0) return usable;
    // A stored entry that cannot be used is dropped everywhere and compiled anew, so it cannot
    // fail this kernel forever (across restarts, for the disk tier).
    Log(LogLevel::kWarning, "dropping a cache entry that cannot be used",
        {{"key", key_hex}, {"tier", lookup.answered_by}, {"why", usable.ToString()}});
    cache_.Invalidate(key_hex);
  }
  auto loaded = std::make_shared<LoadedProgram>();
  loaded->key_hex = key_hex;
  loaded->applied = std::move(optimized.applied);
  loaded->spec = std::make_shared<const ProgramSpec>(std::move(spec));
  loaded->compiled = std::move(compiled);
  loaded->program = std::move(program);
  absl::MutexLock lock(&mu_);
  if (auto it = index_.find(memo_key); it != index_.end())
    return it->second->second;  // a racer won
  loaded_.emplace_front(memo_key, loaded);
  index_[memo_key] = loaded_.begin();
  while (loaded_.size() > max_loaded_) {
    index_.erase(loaded_.back().first);
    loaded_.pop_back();  // plans still holding it keep it alive
  }
  return std::shared_ptr<const LoadedProgram>(std::move(loaded));
}

absl::StatusOr<CompileResult> CachingProgramSource::CompileSource(const Device& device,
                                                                  ProgramSpec spec,
                                                                  const std::string& source_digest,
                                                                  const StopFlag* stop) {
  CompileResult result;
  result.key = KeyFor(device, "source:" + source_digest);
  result.key_hex = result.key.Hex();
  auto compile = [&]() -> absl::StatusOr<CacheEntry> {
    CacheEntry entry;
    absl::StatusOr<CompiledKernel> compiled = device.compiler().Compile(spec, CompileOptions{stop});
    if (compiled.status().code() == absl::StatusCode::kInternal) {
      // What the compiler rejects is the client's source, not a server bug.
      return absl::InvalidArgumentError(absl::StrCat("source: ", compiled.status().message()));
    }
    UOPD_RETURN_IF_ERROR(compiled.status());
    entry.kernel = *std::move(compiled);
    entry.spec = spec;
    entry.key = result.key_hex;
    entry.ast_hash = result.key.ast_hash;
    return entry;
  };
  UOPD_ASSIGN_OR_RETURN(result.lookup, cache_.GetOrCompile(result.key, compile, stop));
  return result;
}

}  // namespace uopd
