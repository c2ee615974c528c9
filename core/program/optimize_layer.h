// OptimizeLayer: the first layer of a program's way to the device (optimize -> compile ->
// load, as ORC's IR -> compile -> link layers): decides the opts a kernel is compiled with.
// The heuristics by default; a search, or the heuristics' candidates timed on the device, as
// strategies of this layer, whose choices are recorded in the compiled-byte cache (the leaf every
// layer consults) so the workers of a cluster choose once.
#ifndef UOPD_CORE_PROGRAM_OPTIMIZE_LAYER_H_
#define UOPD_CORE_PROGRAM_OPTIMIZE_LAYER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/cache/kernel_cache.h"
#include "core/device/device.h"
#include "core/opt/optimize.h"
#include "core/search/kernel_search.h"

namespace uopd {

// Safe for concurrent use. `cache` must outlive it.
class OptimizeLayer {
 public:
  // `default_mode` is what OptMode::kDefault requests get (the heuristics, unless the server is
  // set to search). `search` bounds searches (its `stop` is ignored: each call brings its own).
  OptimizeLayer(KernelCache& cache, OptMode default_mode, SearchOptions search)
      : cache_(cache), default_mode_(default_mode), search_(search) {}

  // kDefault made concrete.
  OptimizeRequest Resolve(const OptimizeRequest& request) const;

  // `request` made concrete for `device`: kSearch and kHeuristic become explicit opts where a
  // search or the timed heuristics decide them (ResolveSearch, ResolveHeuristic).
  absl::StatusOr<OptimizeRequest> ForDevice(const Device& device,
                                            const std::shared_ptr<const KernelAst>& ast,
                                            const OptimizeRequest& request, const StopFlag* stop);

  // `request` made concrete for a target with no device to time on: what a search or timing on
  // a device of this target recorded, else the heuristics.
  OptimizeRequest ForTarget(const std::string& base_device, const CompilerPair& pair,
                            const KernelAst& ast, const OptimizeRequest& request);

  // The opts a concrete `request` applies to `ast` for `target`, remembered per `memo_key`
  // (target, threads, AST and request): the opts are part of the cache key, so a hit needs
  // them first, and the heuristics that choose them cost more than the rest of a memory hit.
  // `optimized` gets the optimized kernel when it had to be made.
  absl::StatusOr<std::vector<Opt>> ChooseOpts(const std::shared_ptr<const KernelAst>& ast,
                                              const OptTarget& target,
                                              const OptimizeRequest& request,
                                              const std::string& memo_key, const StopFlag* stop,
                                              std::optional<OptimizedKernel>* optimized);

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
  // A search's record for `ast` under `pair`'s target if the cache has one; nullopt otherwise,
  // and for a record with tensor cores while they are off (SetTensorCoresEnabled). `kind` is
  // "search", or "heuristic" for the heuristics' timed choice.
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

 private:
  // Stores a tournament's winner, as compiled for timing, under the key its compile would use.
  void KeepTimedWinner(const std::string& base_device, const CompilerPair& pair,
                       const KernelAst& ast, const TournamentResult& timed,
                       const RenderOptions& render, const StopFlag* stop);

  KernelCache& cache_;
  const OptMode default_mode_;
  const SearchOptions search_;
  absl::Mutex mu_;
  static constexpr size_t max_memo_ = 1 << 16;
  // ChooseOpts' choices.
  absl::flat_hash_map<std::string, std::vector<Opt>> chosen_ ABSL_GUARDED_BY(mu_);
  // What ResolveHeuristic decided per target, threads and AST: the opts, or nullopt for a
  // kernel the model does not rank (the ranking behind a decision lowers every candidate).
  absl::flat_hash_map<std::string, std::optional<std::vector<Opt>>> resolved_heuristic_
      ABSL_GUARDED_BY(mu_);
};

// OptimizeKernel on a compile thread (core/util/large_stack.h): its time grows with the AST.
absl::StatusOr<OptimizedKernel> OptimizeOnCompileStack(const std::shared_ptr<const KernelAst>& ast,
                                                       const OptTarget& target,
                                                       const OptimizeRequest& request);

}  // namespace uopd

#endif  // UOPD_CORE_PROGRAM_OPTIMIZE_LAYER_H_
