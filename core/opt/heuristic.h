// ApplyHeuristics: uopd's choice of opts for a kernel on its target, in tinygrad's vocabulary
// (so the choice is an opt list a client could have sent, and travels in caches).
//
// CPU: candidates are made and the one the cost model (core/opt/cost_model.h) expects to run
// fastest is kept, so no kernel shape is left without a good choice:
// - tiles around a vectorized axis: one axis along which the streamed loads are contiguous (or
//   constant) and never gathered becomes vector lanes, padded to a multiple of the lanes when
//   no lane count divides it: an output axis (matmul columns, a convolution's output row, an
//   elementwise kernel's last axis) or a reduce axis (row sums, matrix-vector products, weight
//   gradients, which reduce over batch and space). Output axes whose loads are reused across
//   them (a matmul's rows, a convolution's output channels or rows) are upcast as a register
//   tile of accumulators within the vector registers, and small reduce axes (a convolution's
//   window) are unrolled so that neighbouring loads are shared;
// - uopd's first heuristic (register tiles along the contiguous output axis, or vector partial
//   sums along a contiguous reduce axis), kept as a candidate;
// - tinygrad's own hand-coded optimizations (core/opt/tinygrad_heuristic.h), so the choice is
//   never one tinygrad would beat by its own measure of the model;
// - the kernel as written.
// GPUs: core/opt/gpu_heuristic.h (tinygrad's hand-coded optimizations, tensor cores first,
// except for the row and column reductions uopd lowers its own way).
#ifndef UOPD_CORE_OPT_HEURISTIC_H_
#define UOPD_CORE_OPT_HEURISTIC_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/opt/opt.h"
#include "core/opt/scheduler.h"

namespace uopd {

// Kernels with more nodes than this are not ranked (costing lowers every candidate): the first
// heuristic alone chooses for them. Real models' kernels have a few hundred.
inline constexpr size_t kMaxRankedNodes = 4000;

// Applies what the heuristics choose to `scheduler` (which should have no opts yet, and hold the
// kernel after the pre-optimization passes). `as_written` is the kernel as it runs when no opt is
// chosen (before those passes), which is what the "as written" candidate is costed on; null: the
// scheduler's kernel.
void ApplyHeuristics(Scheduler& scheduler, std::shared_ptr<const KernelAst> as_written = nullptr);

// A CPU candidate and what the cost model expects of it (its cycles, weighted a little against
// more opts as the choice is).
struct RankedCandidate {
  std::vector<Opt> opts;
  double cycles = 0;
  std::string origin;  // "as written", "first heuristic", "tiles", "tinygrad"
};

// Every distinct CPU candidate that applies to `scheduler`'s kernel (no opts applied yet),
// cheapest first: what ApplyHeuristics chooses from (the first), for benchmarks and tests.
std::vector<RankedCandidate> RankCpuCandidates(
    const Scheduler& scheduler, std::shared_ptr<const KernelAst> as_written = nullptr);

// The model's choice first (what ApplyHeuristics applies), then the candidates worth timing
// against it for a kernel heavy enough (estimated at a millisecond or more) that choosing wrong
// costs more than timing them: tinygrad's own choice when the model puts it within 8x (the
// model is rough where LLVM's transformations matter most: unswitched masks, interleaved
// gathers; tinygrad's choice is the baseline never to lose to). One list: nothing to time, the
// model's choice stands. Empty: the kernel is not ranked (over kMaxRankedNodes),
// ApplyHeuristics decides without the model. GPU targets: GpuHeuristicContenders. Timing every
// close candidate would tune further, at a first-run cost users see (a second each for ResNet's
// convolutions); that is what the search mode is for.
std::vector<std::vector<Opt>> HeuristicContenders(
    const Scheduler& scheduler, std::shared_ptr<const KernelAst> as_written = nullptr);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_HEURISTIC_H_
