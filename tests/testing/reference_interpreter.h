// Test helper: a slow, direct interpreter of kernel ASTs on host buffers, written from IR.md and
// README's design notes independently of the lowering, to check the backends against.
#ifndef UOPD_TESTS_TESTING_REFERENCE_INTERPRETER_H_
#define UOPD_TESTS_TESTING_REFERENCE_INTERPRETER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/ir/kernel_ast.h"

namespace uopd::testing {

// What the semantics leave to a backend, and so a test must not hold it to: the bits of a NaN
// that arithmetic makes (x86 makes negative ones, GPUs positive ones with every mantissa bit set),
// and the last bits of transcendental results (EXP2, LOG2, SIN, POW; GPUs are within 2 ulp).
// Interpreting under different choices shows which outputs depend on them.
struct Unspecified {
  bool nan_all_ones = false;    // NaNs from arithmetic are 0x7f..f, not the host's
  int transcendental_ulps = 0;  // transcendental results moved this many ulp (sign: direction)
};

// Runs `ast` over `buffers` (raw bytes by slot) with `vars`. OUT_OF_RANGE when an access leaves
// its buffer (the backends stop there too, so outputs are then not compared).
absl::Status Interpret(const KernelAst& ast, std::vector<std::string>& buffers,
                       const absl::flat_hash_map<std::string, int64_t>& vars,
                       const Unspecified& unspecified = {});

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_REFERENCE_INTERPRETER_H_
