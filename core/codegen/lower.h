// LowerKernel: the backend-independent lowering of a kernel AST to a LinearProgram.
//
// Ranges become loops (opened by the END or REDUCE that closes them, ordered by axis id),
// reductions become accumulators with their identity, implicit and explicit loads become loads,
// masked indices (WHERE(valid, idx, Invalid)) become guarded accesses, and every memory access
// is either proven in bounds from value ranges (using the mask condition) or given a run-time
// check. INDEX arithmetic is lowered to int32 when value ranges prove it fits, else int64.
#ifndef UOPD_CORE_CODEGEN_LOWER_H_
#define UOPD_CORE_CODEGEN_LOWER_H_

#include "absl/status/statusor.h"
#include "core/codegen/linear_program.h"
#include "core/device/program_spec.h"

namespace uopd {

struct LowerOptions {
  // CPU: split the outermost parallel loop across threads when the kernel's estimated
  // iteration count reaches this; 0 disables splitting. CPU kernels take the runtime-only
  // variables core_id and core_count.
  int64_t min_parallel_work = 0;
  // GPU: the outermost parallel (LOOP/GLOBAL) ranges become one flattened thread index over
  // the grid instead of loops, and there are no core variables.
  bool gpu_grid = false;
  // GPU: threads per block for a GROUP reduction in shared memory (0: GROUP ranges are loops).
  // A kernel whose one GROUP_REDUCE range has a constant size dividing it, closed only by
  // top-level scalar reductions, has that range's threads next to each other in a block: each
  // reduces its share, the partial results meet in shared memory after a barrier, and the
  // group's first thread stores (LinearProgram::group_threads).
  int group_threads = 0;
  // With group_threads: the most shared memory the group's arrays of partials may take; a group
  // whose partials would not fit stays a loop in each thread.
  int64_t shared_bytes = 0;
  // A range of constant size whose iterations become the lanes of vector values instead of a
  // loop (core/codegen/vector_range.h); null for none.
  const UOp* vector_range = nullptr;
};

// Errors: INVALID_ARGUMENT naming the node for ASTs whose structure cannot be lowered (a RANGE
// used outside the END or REDUCE closing it, Invalid outside an index guard, a variable declared
// twice with different bounds), UNIMPLEMENTED for valid constructs not supported yet.
// `ast` must outlive the returned program (instructions point at its nodes).
absl::StatusOr<LinearProgram> LowerKernel(const KernelAst& ast, const std::string& name,
                                          const LowerOptions& options);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_LOWER_H_
