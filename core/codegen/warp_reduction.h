// Warp-split reductions: which reduction loops of a GPU-lowered kernel the 32 lanes of a warp
// share, one output per warp instead of one per thread.
//
// One thread per output reads a row-major reduction (a row sum, x - max(x) over a row) with
// addresses a whole row apart between neighbouring threads: every load is its own memory
// transaction. Split among a warp's lanes (lane l takes iterations l, l+32, ...), the same loop
// reads 32 neighbouring elements per load, and the partial results are combined with shuffles
// (every lane ends with the whole result, so what follows the loop is unchanged). A kernel is
// split when its loads favour it: more loads contiguous along the reduction than along the
// outputs (a column sum is coalesced already, and is left alone).
//
// Only loops that are safe to split are: the outermost reduction loops of the kernel, with no
// store inside, whose accumulators start at the identity (all do), are updated in that loop
// alone and not read inside it, in kernels with no run-time bounds check (a lane that stopped
// early would leave its warp's shuffles incomplete).
#ifndef UOPD_CORE_CODEGEN_WARP_REDUCTION_H_
#define UOPD_CORE_CODEGEN_WARP_REDUCTION_H_

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/codegen/linear_program.h"

namespace uopd {

inline constexpr int kWarpLanes = 32;

struct WarpReductionPlan {
  bool enabled = false;  // one warp per output (global index = thread / 32)
  // For each split loop (its kLoopBegin), the accumulators (kAccDefine) to combine across the
  // warp when it ends, with their reduction op.
  absl::flat_hash_map<int, std::vector<std::pair<int, Op>>> loops;
};

// `lanes`: the threads of a warp (32 on NVIDIA GPUs).
WarpReductionPlan PlanWarpReductions(const LinearProgram& program, int lanes = kWarpLanes);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_WARP_REDUCTION_H_
