// Test helper: opt lists that start with a tensor core (TC with padding, each of the first
// three axis choices) and go on with opts drawn from every valid extension, as a search would
// try them: for checking that the TC opt keeps a kernel's meaning on the CPU oracle and
// compiles for a GPU whatever follows it.
#ifndef UOPD_TESTS_TESTING_TENSOR_CORE_OPTS_H_
#define UOPD_TESTS_TESTING_TENSOR_CORE_OPTS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/opt/optimize.h"
#include "core/opt/search_space.h"

namespace uopd::testing {

// Up to 3 x `seeds` lists of 1 + `steps` opts for `ast` on `target`; only lists that apply.
// `select`: the core (tinygrad's tc_select; -1: the first that fits).
inline std::vector<std::vector<Opt>> TensorCoreOptLists(const std::shared_ptr<const KernelAst>& ast,
                                                        const OptTarget& target, int seeds,
                                                        int steps, int select = -1) {
  std::vector<std::vector<Opt>> out;
  for (int axis = 0; axis < 3; ++axis) {
    Opt tc{OptOp::kTc, axis, 0};
    tc.tc = {select, 2, 1};
    for (uint64_t seed = 1; seed <= static_cast<uint64_t>(seeds); ++seed) {
      std::vector<Opt> opts = {tc};
      for (int step = 0; step < steps; ++step) {
        absl::flat_hash_set<std::string> seen;
        std::vector<SearchCandidate> next = ExtendByOneOpt(ast, target, opts, seen);
        if (next.empty()) break;
        opts = next[(seed * 7919 + step * 104729) % next.size()].opts;
      }
      if (OptimizeKernel(ast, target, {OptMode::kOpts, opts}).ok()) out.push_back(opts);
    }
  }
  return out;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_TENSOR_CORE_OPTS_H_
