// WorkGroupLoops: a program that works in groups (LinearProgram::group_threads: a thread index,
// shared memory and barriers) rewritten to run on the CPU, as CPU OpenCL runtimes run work
// groups. The grid's blocks become the grid loop (kGlobalIndex over the blocks), and a block's
// threads run as one loop per part of the kernel between two barriers: every thread finishes a
// part before any starts the next, which is what a barrier promises. A value one part computes
// and a later part uses is kept per thread in a block-local array; shared memory is a
// block-local array too. This is how the GPU lowering's groups are checked against the
// reference interpreter on machines without a GPU (the LLVM renderer's gpu_lowering mode).
#ifndef UOPD_CORE_CODEGEN_WORK_GROUP_LOOPS_H_
#define UOPD_CORE_CODEGEN_WORK_GROUP_LOOPS_H_

#include "core/codegen/linear_program.h"

namespace uopd {

// REQUIRES: barriers at the top level of the kernel (outside every loop), and each accumulator
// updated in one part (it is defined there; it may be read later). A program without groups is
// returned unchanged.
LinearProgram WorkGroupLoops(const LinearProgram& program);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_WORK_GROUP_LOOPS_H_
