// Optimize: what a kernel AST becomes before code generation, by the client's choice (as
// tinygrad's KernelInfo.opts_to_apply): the heuristics (default), nothing, an explicit opt
// list, or a search (core/opt/search.h). The opts applied are part of the kernel's identity in
// the compiled-byte cache and travel back to the client.
#ifndef UOPD_CORE_OPT_OPTIMIZE_H_
#define UOPD_CORE_OPT_OPTIMIZE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device/renderer.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/opt.h"
#include "core/opt/opt_target.h"

namespace uopd {

enum class OptMode {
  kDefault,    // the server's default (the heuristics unless it is started to search)
  kHeuristic,  // uopd's hand-written heuristics for the target
  kNone,       // the AST as written (tinygrad's opts_to_apply=())
  kOpts,       // exactly `opts`, in tinygrad's numbering (of the graph core/opt/preopt.h makes;
               // errors name the opt)
  kSearch,     // time candidate opt lists on the device (a ProgramSource concern)
};

struct OptimizeRequest {
  OptMode mode = OptMode::kDefault;
  std::vector<Opt> opts;  // kOpts
  // Not opts but choices about the rendered kernel, travelling with the request so every path
  // that renders it (compile, search, timing) renders the same.
  RenderOptions render;
  // What identifies the request in caches and memos: "heuristic", "none", "opts:UPCAST(1, 4) ...",
  // then ";fma" when render.allow_fma.
  std::string Key() const;
};

struct OptimizedKernel {
  std::shared_ptr<const KernelAst> ast;  // the input itself when nothing was applied
  std::vector<Opt> applied;
};

// Whether the AST's ranges already carry an optimizer's types (anything but LOOP and REDUCE):
// such an AST is run as given under the heuristics.
bool IsAlreadyOptimized(const KernelAst& ast);

// Applies `request` (kDefault and kSearch are resolved by the caller: here they mean the
// heuristics). INVALID_ARGUMENT naming the opt (index and spelling) when an explicit opt does
// not apply.
absl::StatusOr<OptimizedKernel> OptimizeKernel(std::shared_ptr<const KernelAst> ast,
                                               const OptTarget& target,
                                               const OptimizeRequest& request);

// The heuristics' choice for `ast` and the candidates worth timing against it
// (core/opt/heuristic.h HeuristicContenders), as opt lists an OptimizeRequest of mode kOpts
// applies. Empty when the kernel is not ranked (already optimized, too large, a GPU target).
std::vector<std::vector<Opt>> HeuristicContendersFor(const std::shared_ptr<const KernelAst>& ast,
                                                     const OptTarget& target);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_OPTIMIZE_H_
