// The GPU half of the heuristics (ApplyHeuristics for targets with locals): tinygrad's
// hand-coded optimizations, tensor cores first as tinygrad tries them, except for two kernel
// shapes uopd lowers its own way: row reductions a warp's lanes share as written
// (core/codegen/warp_reduction.h), their loads widened to float4, and column reductions split
// across a block's threads (core/opt/column_split.h).
//
// No model of the GPU ranks these choices. Where one was made over another that some GPU may
// run faster (tensor cores over tinygrad's list without them; uopd's reductions over tinygrad's
// list), GpuHeuristicContenders names both, and a daemon with the GPU times them on it the first
// time the kernel is compiled (core/program/optimize_layer.h), checking each against the kernel
// as written.
#ifndef UOPD_CORE_OPT_GPU_HEURISTIC_H_
#define UOPD_CORE_OPT_GPU_HEURISTIC_H_

#include <vector>

#include "core/opt/opt.h"
#include "core/opt/scheduler.h"

namespace uopd {

// Kernels with fewer loop iterations than this (all its ranges' sizes multiplied) are not timed
// unless the heuristics give them tensor cores: a few milliseconds of NVRTC per contender would
// cost more than choosing wrong saves. A 64^3 matmul has 2^18; an 8192 x 8192 sum 2^26.
inline constexpr double kGpuTimedIterations = 1 << 22;

// Applies the GPU heuristics to `scheduler` (no opts yet; the kernel after the
// pre-optimization passes).
void ApplyGpuHeuristics(Scheduler& scheduler);

// The GPU heuristics' choice first, then what it was chosen over, for a kernel with at least
// kGpuTimedIterations iterations and constant sizes, or whatever its size when the choice has
// tensor cores (the instruction's fragment layouts are checked on the GPU itself, against the
// kernel as written, before a client's result depends on them; where no timing can check them,
// the daemon runs a list without them: OptimizeLayer::ResolveHeuristic): tinygrad's own
// list (tensor cores first), tinygrad's list without tensor cores (its TC=0), and for a row
// reduction the warp shares, that reduction as written (without float4 loads). One list:
// nothing to time.
std::vector<std::vector<Opt>> GpuHeuristicContenders(const Scheduler& scheduler);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_GPU_HEURISTIC_H_
