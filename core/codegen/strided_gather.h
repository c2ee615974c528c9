// Strided gathers: a vector built from loads of one buffer at idx0, idx0 + s, ..., idx0 + (n-1) s
// (s = 2..4, the lanes of one index vector), such as a stride-2 pooling or convolution reads. A
// backend with wide loads reads the span and picks every s-th element (as LLVM's loop vectorizer
// spells interleaved accesses) instead of loading and inserting lane by lane; the loop plan
// leaves the lane loads of such a gather unbranched, since their values come from the span.
#ifndef UOPD_CORE_CODEGEN_STRIDED_GATHER_H_
#define UOPD_CORE_CODEGEN_STRIDED_GATHER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "core/codegen/linear_program.h"

namespace uopd {

struct StridedGather {
  int slot;
  int64_t stride;
  int mask;  // LanesMask's instruction; -1 when the lanes are unmasked
};

// idx[k] - idx[0] for each lane k of integer vector `instr`, when those are constants: a vector
// of lane numbers scaled and shifted by uniform amounts (the indices of a strided access);
// nullopt otherwise.
std::optional<std::vector<int64_t>> LaneOffsets(const LinearProgram& program, int instr);

// Whether `build` is a strided gather of plain (not bool, not emulated small-float) elements,
// every lane masked the same way or none masked, and how.
std::optional<StridedGather> MatchStridedGather(const LinearProgram& program, const Instr& build);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_STRIDED_GATHER_H_
