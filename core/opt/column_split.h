// SplitColumnReduction: a GPU heuristic of uopd's own for reductions down the columns of a
// row-major array (out[j] = sum_i x[i, j]) with too few outputs to fill a GPU. As written each
// output is one thread looping over every row: 4,096 columns are 16 blocks of 256 threads, a
// fraction of an H100's 132 multiprocessors, each thread waiting on one load at a time.
// tinygrad's hand-coded opts keep that shape (or, for 2,048 outputs or fewer, GROUPTOP, whose
// neighbouring threads read one column's rows, far apart).
//
// This applies LOCAL(j, 32) then GROUP(i, 8): the group is the newer axis, so the lowering
// numbers the LOCAL threads fastest (as tinygrad's gpudims does): a warp reads 32 neighbouring
// columns of one row (a full 128-byte line), each output's 8 threads take an eighth of the rows,
// and their partial sums meet in shared memory. Eight times the threads, every load coalesced.
#ifndef UOPD_CORE_OPT_COLUMN_SPLIT_H_
#define UOPD_CORE_OPT_COLUMN_SPLIT_H_

#include "core/opt/scheduler.h"

namespace uopd {

// Applies the split when the kernel is such a reduction on a target with shared memory: one
// REDUCE axis of at least 256 (a multiple of 8) that every load using it steps by more than
// one element per row, an innermost output axis (a multiple of 32) that those loads read
// contiguously, and at most 32,768 outputs. `scheduler` holds no opts; true when it applied.
bool SplitColumnReduction(Scheduler& scheduler);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_COLUMN_SPLIT_H_
