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

// Runs `ast` over `buffers` (raw bytes by slot) with `vars`. OUT_OF_RANGE when an access leaves
// its buffer (the backends stop there too, so outputs are then not compared).
absl::Status Interpret(const KernelAst& ast, std::vector<std::string>& buffers,
                       const absl::flat_hash_map<std::string, int64_t>& vars);

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_REFERENCE_INTERPRETER_H_
