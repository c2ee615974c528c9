// SearchKernelOpts: the search optimization mode. Times candidate opt lists for one kernel on
// its device, on made-up inputs in scratch buffers, and keeps the fastest whose outputs match
// the kernel as written.
//
// The search is a beam search in the manner of tinygrad's BEAM (docs/OPTIMIZER.md section 8):
// each round extends every member of the beam by one opt (core/opt/search_space.h), compiles
// and times the new candidates, and keeps the fastest few. It starts from both the empty list
// and uopd's heuristics, so it never returns something slower than the heuristics on the
// inputs it timed. It stops when a round gains less than 1%, at its time budget, or when
// `stop` is set (the caller's deadline or cancellation); the best verified list so far is the
// answer then.
#ifndef UOPD_CORE_SEARCH_KERNEL_SEARCH_H_
#define UOPD_CORE_SEARCH_KERNEL_SEARCH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/device/device.h"
#include "core/device/stop_flag.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/opt.h"

namespace uopd {

struct SearchOptions {
  absl::Duration budget = absl::Seconds(10);  // wall time for the whole search
  int beam_width = 4;
  // Scratch memory the search may allocate on the device; bigger kernels get the heuristics.
  int64_t max_scratch_bytes = int64_t{1} << 30;
  const StopFlag* stop = nullptr;
  // How every candidate (and the reference) is rendered: as the request that searches asked.
  RenderOptions render;
  // Tournaments: run the kernel as written first, and time only candidates whose outputs match
  // its outputs (as the search's must). A GPU's heuristics choose among lowerings no model has
  // checked on that GPU, and timing picks what runs for every later call. When the kernel as
  // written cannot run on the made-up inputs (a gather's bounds check), nothing is checked.
  bool verify_candidates = false;
};

struct SearchResult {
  std::vector<Opt> opts;         // the fastest candidate whose outputs matched
  double seconds = 0;            // its kernel time on the scratch inputs
  double heuristic_seconds = 0;  // the heuristics' time on the same inputs (0: not timed)
  int candidates = 0;            // candidates compiled and timed
  bool converged = false;        // a round gained under 1% (not cut short by time)
  bool stopped = false;          // cut short by `stop`: the caller's call is over
  std::string note;              // why the search ended, or why it fell back
};

// Searches opts for `ast` on `device` (its first renderer/compiler pair). Fails only when the
// kernel as written cannot be compiled or run on the made-up inputs (then nothing can be
// verified); a candidate that fails is skipped.
absl::StatusOr<SearchResult> SearchKernelOpts(const Device& device,
                                              const std::shared_ptr<const KernelAst>& ast,
                                              const SearchOptions& options);

struct TournamentResult {
  size_t winner = 0;            // index of the fastest candidate
  std::vector<double> seconds;  // each candidate's time (infinity: it did not compile or run)
  bool stopped = false;         // cut short by `stop`: winner is 0, nothing was decided
  // The winner as it was compiled for timing (rendered from the AST with its opts applied, with
  // the options' RenderOptions): a caller keeps these rather than compile the same program again.
  // Empty when no candidate ran.
  std::vector<Opt> winner_applied;  // the opts as OptimizeKernel applied them
  ProgramSpec winner_spec;          // its AST is the optimized one
  CompiledKernel winner_kernel;
  // verify_candidates: whether the kernel as written ran (it cannot where a gather's made-up
  // indices leave its table), so that every timed candidate matched its outputs; and the
  // candidates whose outputs differed (not timed: their seconds stay infinity).
  bool verified = false;
  std::vector<size_t> differed;
  // The budget or the caller's deadline ended the timing, maybe before every candidate ran.
  bool out_of_time = false;
};

// Times each of `candidates` (opt lists of mode kOpts for `ast`) on `device`, on made-up inputs
// in scratch buffers, interleaved, and names the fastest. Unlike the search it does not extend
// them, and checks their outputs only with options.verify_candidates: they are the heuristics'
// own choices, trusted as the heuristics are where the heuristics are checked.
// FAILED_PRECONDITION when the buffers do not fit options.max_scratch_bytes; RESOURCE_EXHAUSTED
// when they do not fit the caller's quota; with verify_candidates, the kernel as written's error
// when it cannot be compiled or run (other than stopping at a bounds check).
absl::StatusOr<TournamentResult> TimeOptCandidates(const Device& device,
                                                   const std::shared_ptr<const KernelAst>& ast,
                                                   const std::vector<std::vector<Opt>>& candidates,
                                                   const SearchOptions& options);

}  // namespace uopd

#endif  // UOPD_CORE_SEARCH_KERNEL_SEARCH_H_
