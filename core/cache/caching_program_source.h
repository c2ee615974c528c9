// CachingProgramSource: the ProgramSource of the daemon. Kernels come from the KernelCache
// (memory, disk, remote tiers, or compiled once on a miss), and loaded programs are kept per
// device so a hit on a warm kernel neither renders, compiles nor loads.
#ifndef UOPD_CORE_CACHE_CACHING_PROGRAM_SOURCE_H_
#define UOPD_CORE_CACHE_CACHING_PROGRAM_SOURCE_H_

#include <list>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/cache/kernel_cache.h"
#include "core/plan/program_source.h"
#include "core/search/kernel_search.h"

namespace uopd {

struct CompileResult {
  CacheKey key;
  std::string key_hex;
  CacheLookup lookup;
  std::vector<Opt> applied;  // the opts the kernel was optimized with
};

// Safe for concurrent use. `cache` must outlive it.
class CachingProgramSource : public ProgramSource {
 public:
  // `default_mode` is what OptMode::kDefault requests get (the heuristics, unless the server
  // is set to search).
  // `search` bounds searches (its `stop` is ignored: each call brings its own).
  explicit CachingProgramSource(KernelCache& cache, size_t max_loaded_programs = 4096,
                                OptMode default_mode = OptMode::kHeuristic,
                                SearchOptions search = {})
      : cache_(cache),
        max_loaded_(max_loaded_programs),
        default_mode_(default_mode),
        search_(search) {}

  // The compiled entry for `ast`, optimized as `optimization` asks, on `device`, from the cache
  // or compiled now. A compile is abandoned (CANCELLED) once `stop` is set.
  absl::StatusOr<CompileResult> Compile(const Device& device, std::shared_ptr<const KernelAst> ast,
                                        const OptimizeRequest& optimization = {},
                                        const StopFlag* stop = nullptr);
  // The same for a renderer and compiler not bound to a device (compiling for a target).
  absl::StatusOr<CompileResult> Compile(const std::string& base_device, const CompilerPair& pair,
                                        std::shared_ptr<const KernelAst> ast,
                                        const OptimizeRequest& optimization = {},
                                        const StopFlag* stop = nullptr);

  // The compiled entry for source a client rendered itself (`spec.src`, described by `spec`),
  // from the cache or compiled now, keyed on `device`'s base key, its compiler and
  // `source_digest` (a digest of the source and its stated metadata as the client sent them).
  // What the compiler rejects is the client's source: INVALID_ARGUMENT.
  absl::StatusOr<CompileResult> CompileSource(const Device& device, ProgramSpec spec,
                                              const std::string& source_digest,
                                              const StopFlag* stop = nullptr);

  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(Device& device,
                                                           std::shared_ptr<const KernelAst> ast,
                                                           const OptimizeRequest& optimization,
                                                           const StopFlag* stop) override;

  // kDefault made concrete.
  OptimizeRequest Resolve(const OptimizeRequest& request) const;

  // A kSearch request made concrete for `device`: the opts a search chose for this AST on this
  // target, from the cache (a record any worker sharing it may have written) or from a search
  // run now (single flight: concurrent requests for one kernel wait for one search). A search
  // the caller's stop cuts short is not recorded (CANCELLED); one that spent its budget is,
  // and a later request with at least twice that budget searches again.
  // The search times candidates rendered with `render`, and its record is kept per float mode.
  absl::StatusOr<OptimizeRequest> ResolveSearch(const Device& device,
                                                const std::shared_ptr<const KernelAst>& ast,
                                                const StopFlag* stop,
                                                const RenderOptions& render = {});
  // A search's record for `ast` under `pair`'s target if the cache has one; nullopt otherwise.
  // `kind` is "search", or "heuristic" for the heuristics' timed choice.
  std::optional<std::vector<Opt>> FindSearchRecord(const std::string& base_device,
                                                   const CompilerPair& pair, const KernelAst& ast,
                                                   const std::string& kind = "search",
                                                   const RenderOptions& render = {});

  // A kHeuristic request made concrete for `device`: when the cost model cannot tell the
  // heuristics' best candidates apart for a heavy kernel (core/opt/heuristic.h
  // HeuristicContenders), they are compiled and timed once on the device and the fastest is
  // recorded in the compiled-byte cache (so workers sharing it do not time them again);
  // otherwise the model's choice, as explicit opts (kHeuristic as it was for kernels the model
  // does not rank).
  absl::StatusOr<OptimizeRequest> ResolveHeuristic(const Device& device,
                                                   const std::shared_ptr<const KernelAst>& ast,
                                                   const StopFlag* stop,
                                                   const RenderOptions& render = {});

  KernelCache& cache() { return cache_; }

 private:
  absl::StatusOr<CompileResult> CompileFor(const std::string& base_device, const CompilerPair& pair,
                                           int threads, std::shared_ptr<const KernelAst> ast,
                                           const OptimizeRequest& optimization,
                                           const StopFlag* stop);

  // Stores a tournament's winner, as compiled for timing, under the key its compile would use.
  void KeepTimedWinner(const std::string& base_device, const CompilerPair& pair,
                       const KernelAst& ast, const TournamentResult& timed,
                       const RenderOptions& render, const StopFlag* stop);

  // The opts OptimizeKernel chose, by target, threads, AST hash and request (see CompileFor).
  std::optional<std::vector<Opt>> ChosenOpts(const std::string& key);
  void RememberChosenOpts(const std::string& key, const std::vector<Opt>& opts);

  using Lru = std::list<std::pair<std::string, std::shared_ptr<const LoadedProgram>>>;
  KernelCache& cache_;
  const size_t max_loaded_;
  const OptMode default_mode_;
  const SearchOptions search_;
  absl::Mutex mu_;
  Lru loaded_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<std::string, Lru::iterator> index_ ABSL_GUARDED_BY(mu_);
  static constexpr size_t max_chosen_ = 1 << 16;
  absl::flat_hash_map<std::string, std::vector<Opt>> chosen_ ABSL_GUARDED_BY(mu_);
  // What ResolveHeuristic decided per target, threads and AST: the opts, or nullopt for a
  // kernel the model does not rank (the ranking behind a decision lowers every candidate).
  absl::flat_hash_map<std::string, std::optional<std::vector<Opt>>> resolved_heuristic_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_CACHING_PROGRAM_SOURCE_H_
