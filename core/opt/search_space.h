// SearchSpace: the opt lists a search considers, one opt at a time (tinygrad's BEAM actions,
// docs/OPTIMIZER.md section 8, for the opts the target has, tensor cores included; UPCAST and
// UNROLL also by 8, 16 and 32, the vector widths uopd's CPU code generation turns into
// registers).
#ifndef UOPD_CORE_OPT_SEARCH_SPACE_H_
#define UOPD_CORE_OPT_SEARCH_SPACE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/opt.h"
#include "core/opt/opt_target.h"

namespace uopd {

struct SearchCandidate {
  std::vector<Opt> opts;
  std::shared_ptr<const KernelAst> ast;  // `opts` applied
};

// Every action that may apply on `target` (whether it does depends on the kernel).
std::vector<Opt> SearchActions(const OptTarget& target);

// `base` extended by each action that applies to `ast` after it, keeping only kernels not in
// `seen` (AST hashes; the new ones are added) and with at most `max_upcast` elements in the
// product of their UPCAST and UNROLL ranges (tinygrad's BEAM_UPCAST_MAX, 256).
std::vector<SearchCandidate> ExtendByOneOpt(const std::shared_ptr<const KernelAst>& ast,
                                            const OptTarget& target, const std::vector<Opt>& base,
                                            absl::flat_hash_set<std::string>& seen,
                                            int64_t max_upcast = 256);

// A random valid opt list of up to `count` opts for `ast` (each step: the first action, in an
// order drawn from `seed`, that applies after the previous ones and keeps the UPCAST x UNROLL
// product within `max_upcast`). Deterministic in `seed`: for testing that any valid list keeps
// a kernel's meaning.
std::vector<Opt> RandomOptList(const std::shared_ptr<const KernelAst>& ast, const OptTarget& target,
                               uint64_t seed, int count, int64_t max_upcast = 256);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_SEARCH_SPACE_H_
