// Devectorize: the last pass before a renderer. Every vector instruction (core/codegen/
// linear_program.h) the backend does not spell is rewritten into one scalar instruction per
// lane: a vector load becomes loads of consecutive elements, a vector accumulator one
// accumulator per lane, a horizontal reduction a chain of scalar ops. What the backend keeps as
// vectors it gets unchanged, with lanes extracted or vectors built where the two meet.
#ifndef UOPD_CORE_CODEGEN_DEVECTORIZE_H_
#define UOPD_CORE_CODEGEN_DEVECTORIZE_H_

#include <functional>

#include "core/codegen/linear_program.h"

namespace uopd {

// Whether the backend spells `instr` (a vector instruction of `program`) as a vector. An
// accumulator's updates and reads follow what its definition got.
using KeepVector = std::function<bool(const LinearProgram& program, const Instr& instr)>;

LinearProgram Devectorize(const LinearProgram& program, const KeepVector& keep);

// A program with no vector instruction left (what a backend without vectors renders).
inline LinearProgram Scalarize(const LinearProgram& program) {
  return Devectorize(program, [](const LinearProgram&, const Instr&) { return false; });
}

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_DEVECTORIZE_H_
