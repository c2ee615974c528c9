// ApplyHeuristics: uopd's hand-written choice of opts for a kernel on its target, in tinygrad's
// vocabulary (so the choice is an opt list a client could have sent, and travels in caches).
//
// CPU (aiming past tinygrad's hand-coded ones, docs/OPTIMIZER.md section 7):
// - reductions whose output is contiguous along an axis (matmul, column sums, convolutions):
//   that axis is upcast by a vector register's width and then to a few registers more, and an
//   output axis some operand does not use (a matmul's rows: its B vector is reused) is upcast
//   too, within half the vector registers: a register tile of accumulators, the shape a BLAS
//   micro-kernel has. A contiguous axis that no vector width divides is padded first.
// - reductions along a contiguous axis (row sums, softmax): the reduce axis is unrolled by a
//   vector width (partial sums per lane) and four rows run at once.
// - elementwise kernels: the contiguous axis upcast by a vector width.
// CUDA: nothing yet (kernels run as written; the grid comes from the lowering).
#ifndef UOPD_CORE_OPT_HEURISTIC_H_
#define UOPD_CORE_OPT_HEURISTIC_H_

#include "core/opt/scheduler.h"

namespace uopd {

// Applies what the heuristics choose to `scheduler` (which should have no opts yet).
void ApplyHeuristics(Scheduler& scheduler);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_HEURISTIC_H_
