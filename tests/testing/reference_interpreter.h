// Test helper: a slow, direct interpreter of kernel ASTs on host buffers, written from IR.md and
// README's design notes independently of the lowering, to check the backends against.
#ifndef UOPD_TESTS_TESTING_REFERENCE_INTERPRETER_H_
#define UOPD_TESTS_TESTING_REFERENCE_INTERPRETER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/ir/kernel_ast.h"

namespace uopd::testing {

// What the semantics leave to a backend, and so a test must not hold it to: the bits of a NaN
// that arithmetic makes (x86 makes negative ones, GPUs positive ones with every mantissa bit set),
// the last bits of transcendental results (EXP2, LOG2, SIN, POW; GPUs are within 2 ulp), and the
// order a reduction combines its values in (which decides overflow, and which NaN a MAX keeps).
// Interpreting under different choices shows which outputs depend on them.
struct Unspecified {
  bool nan_all_ones = false;    // NaNs from arithmetic are 0x7f..f, not the host's
  int transcendental_ulps = 0;  // transcendental results moved this many ulp (sign: direction)
  // Reductions run last iteration first: the order is open too (backends split reductions
  // across vector registers and warp lanes).
  bool reverse_reductions = false;
  // Reductions split their outermost range among this many lanes (iteration i to lane
  // i % lanes), each lane combining in order, the lanes then combined pairwise as a GPU warp's
  // shuffles do (lane i with lane i + n/2, ...). 0: one accumulator.
  int reduction_lanes = 0;
  // Nonzero: reductions combine their values, one after another, in a random order drawn from
  // this seed (vectorizing compilers pick orders no fixed variation predicts).
  uint32_t reduction_shuffle = 0;
  // Reductions combine their identity once more at the end, as PADTO's padded iterations do: a
  // MAX over NaNs then gives the identity (-inf) instead of NaN (MAX with NaN is open).
  bool pad_reductions = false;
};

// Runs `ast` over `buffers` (raw bytes by slot) with `vars`, with tinygrad's algebraic rewrites
// applied first (IR.md: they are part of the meaning). OUT_OF_RANGE when an access leaves its
// buffer (the backends stop there too, so outputs are then not compared).
absl::Status Interpret(const KernelAst& ast, std::vector<std::string>& buffers,
                       const absl::flat_hash_map<std::string, int64_t>& vars,
                       const Unspecified& unspecified = {});

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_REFERENCE_INTERPRETER_H_
