// Vector memory accesses on a GPU grid. A GPU has no vector arithmetic worth spelling, but it
// reads and writes up to 16 bytes per thread in one instruction (`ld.global.v4`), a quarter of
// the instructions and the full width of a memory transaction. tinygrad's CUDA renderer keeps
// float4 loads and stores for the same reason (`supports_float4`) and writes every other vector
// op lane by lane; a grid target keeps exactly these (Devectorize writes out the rest).
//
// Alignment is the backend's to guard: a 16-byte access must be 16-byte aligned, and a buffer
// view may start anywhere in its base, so the backend tests each access's address and falls
// back to one element at a time (backends/cuda/cuda_renderer.cc).
#ifndef UOPD_CORE_CODEGEN_GRID_VECTOR_ACCESS_H_
#define UOPD_CORE_CODEGEN_GRID_VECTOR_ACCESS_H_

#include <cstdint>

#include "core/codegen/linear_program.h"

namespace uopd {

// The most lanes a grid target's vector range gets: tinygrad folds loads by 4 (float4).
inline constexpr int64_t kGridVectorLanes = 4;
// The widest single access a thread makes, in bytes.
inline constexpr int kGridVectorBytes = 16;

// Whether a grid target keeps `instr` as a vector: a load or store of global memory whose lanes
// share one mask (or none) and whose bytes are a power of two, not of bools; a tensor core
// instruction and the fragments it is given (arrays of registers).
bool GridKeepsVector(const LinearProgram& program, const Instr& instr);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_GRID_VECTOR_ACCESS_H_
