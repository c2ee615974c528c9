#include "core/codegen/cpu_lowering.h"

#include "core/codegen/expand.h"
#include "core/codegen/lower.h"
#include "core/codegen/tinygrad_algebra.h"
#include "core/codegen/transcendental.h"
#include "core/codegen/vector_range.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<CpuLowering> LowerCpuKernel(std::shared_ptr<const KernelAst> ast,
                                           const std::string& name,
                                           const CpuLoweringOptions& options) {
  LowerOptions lower_options;
  lower_options.min_parallel_work = options.gpu_lowering ? 0 : options.min_parallel_work;
  lower_options.gpu_grid = options.gpu_lowering;
  // EXP2 and LOG2 as arithmetic: a libm call per element would keep loops scalar.
  std::shared_ptr<const KernelAst> decomposed = DecomposeTranscendentals(ApplyTinygradAlgebra(ast));
  // One UPCAST or UNROLL range along contiguous memory becomes vector lanes; the others are
  // written out (register tiles, unrolled reductions).
  ExpandOptions expand;
  if (!options.gpu_lowering) expand.keep = ChooseVectorRange(*decomposed, kMaxVectorLanes);
  CpuLowering out;
  out.expanded = ExpandRanges(decomposed, expand);
  if (expand.keep != nullptr) {
    lower_options.vector_range = FindRange(*out.expanded, expand.keep->arg());
  }
  UOPD_ASSIGN_OR_RETURN(out.program, LowerKernel(*out.expanded, name, lower_options));
  return out;
}

}  // namespace uopd
