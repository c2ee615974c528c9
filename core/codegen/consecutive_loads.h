// FuseConsecutiveLoads: scalar loads of consecutive elements of one buffer under one mask (or
// none), in one stretch of straight-line code, read as one vector load, as tinygrad's
// devectorizer folds the loads an expansion wrote out (`fold_expanded_index`). A tensor core's
// A fragment holds pairs of neighbouring K elements of a row (NVIDIA's m16n8k16 layout): two
// 2-byte loads become one 4-byte load; a matmul's K unrolled by 4 reads A's four as a float4.
// The backend guards alignment (core/codegen/grid_vector_access.h).
#ifndef UOPD_CORE_CODEGEN_CONSECUTIVE_LOADS_H_
#define UOPD_CORE_CODEGEN_CONSECUTIVE_LOADS_H_

#include "core/codegen/linear_program.h"

namespace uopd {

// Runs of 2, 4, ... loads (at most `max_bytes` together) of element i, i + 1, ... (i + c
// written as ADD(i, c)) of one buffer under one mask become one vector load and its extracts,
// placed at the load of element i, which must come first. Runs that would move a load across
// a store, a bounds check, a barrier or a loop's edge stay as they are.
LinearProgram FuseConsecutiveLoads(const LinearProgram& program, int max_bytes);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_CONSECUTIVE_LOADS_H_
