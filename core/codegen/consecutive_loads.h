// FuseConsecutiveLoads: a vector built from scalar loads of consecutive elements of one buffer
// under one mask (or none) reads them as one vector load. A tensor core's A fragment is built
// so: each thread holds pairs of neighbouring K elements of a row (NVIDIA's m16n8k16 layout),
// and two 2-byte loads become one 4-byte load, as tinygrad's devectorizer folds them
// (`fold_expanded_index`). The backend guards alignment (core/codegen/grid_vector_access.h).
#ifndef UOPD_CORE_CODEGEN_CONSECUTIVE_LOADS_H_
#define UOPD_CORE_CODEGEN_CONSECUTIVE_LOADS_H_

#include "core/codegen/linear_program.h"

namespace uopd {

// Each kBuild's runs of 2, 4, ... lanes (at most `max_bytes` together) that load element i,
// i + 1, ... of one buffer under one mask become one vector load and its extracts, placed at
// the run's last load. Runs that would move a load across a store, a bounds check, a barrier
// or a loop's edge, or ahead of one of its uses, stay as they are.
LinearProgram FuseConsecutiveLoads(const LinearProgram& program, int max_bytes);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_CONSECUTIVE_LOADS_H_
