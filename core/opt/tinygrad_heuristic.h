// ApplyTinygradHeuristics: tinygrad 0.12's hand_coded_optimizations
// (tinygrad/codegen/opt/heuristic.py; docs/OPTIMIZER.md section 7) ported step for step, so uopd
// can offer the opts tinygrad itself would choose for a kernel (as a candidate of its own
// heuristics, and as the baseline tinygrad's users know).
//
// Every step that applies to uopd's targets is there, in tinygrad's order, with tinygrad's
// tests and tie-breaks: matvec (targets with locals and shared memory), GROUPTOP for small
// outputs, whole-axis upcasts of small masked axes, the output-upcast loop and its
// (num_strides, sum_strides, axis, amount) ranking, the reduce unroll, the default upcast,
// locals, and threads (up to OptTarget::max_threads, tinygrad's global_max[0]). The quirks are
// kept too: a buffer "uses" an axis only when the range is strictly inside its index expression
// (an index that is the bare range does not count, as in tinygrad's backward_slice); the
// output-upcast loop remembers axis numbers rather than ranges; and a kernel whose store the CPU
// pre-opt passes cut in pieces (a GROUP of ENDs) gets no THREAD, which uopd's Scheduler would
// allow but tinygrad's refuses.
//
// Tensor cores come first, as in tinygrad (TryTensorCores). Left out: image-buffer upcasts (IR v1
// has no image dtypes), DSP's upcast amounts (no DSP target), and the NOLOCALS, MV_* and TC_*
// environment switches (their defaults are used). Where tinygrad's own step would raise (an opt it
// applies outside a try), this stops with what was applied so far; none of the corpus kernels gets
// there. The opts are applied by uopd's Scheduler, so where it refuses what tinygrad's accepts (it
// splits constant sizes only: matvec's GROUP on a symbolic reduce axis), the choice follows the
// Scheduler.
#ifndef UOPD_CORE_OPT_TINYGRAD_HEURISTIC_H_
#define UOPD_CORE_OPT_TINYGRAD_HEURISTIC_H_

#include "core/opt/scheduler.h"

namespace uopd {

// tinygrad 0.12's hand_coded_optimizations (heuristic.py), step for step: the opts tinygrad's
// own heuristics choose for this kernel on this target. `scheduler` holds the pre-opt AST
// (core/opt/preopt.h already run) and no opts; on return it holds tinygrad's choice applied.
void ApplyTinygradHeuristics(Scheduler& scheduler);

// tinygrad's first step: a kernel with one reduce axis whose reduction a tensor core of the
// target computes gets TC (use_tensor_cores 1), then upcasts of what is left of M and N and a
// LOCAL of N. False (nothing applied) when no core fits.
bool TryTensorCores(Scheduler& scheduler);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_TINYGRAD_HEURISTIC_H_
