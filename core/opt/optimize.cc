#include "core/opt/optimize.h"

#include "absl/strings/str_cat.h"
#include "core/opt/heuristic.h"
#include "core/opt/preopt.h"
#include "core/opt/scheduler.h"

namespace uopd {

std::string OptimizeRequest::Key() const {
  std::string key;
  switch (mode) {
    case OptMode::kNone:
      key = "none";
      break;
    case OptMode::kOpts:
      key = absl::StrCat("opts:", OptsToString(opts));
      break;
    case OptMode::kSearch:
      key = "search";
      break;
    default:
      key = "heuristic";
      break;
  }
  if (!render.FloatMode().empty()) absl::StrAppend(&key, ";", render.FloatMode());
  return key;
}

bool IsAlreadyOptimized(const KernelAst& ast) {
  for (const UOp* node : Toposort(ast.root)) {
    if (node->op() == Op::kRange && node->arg().axis_type != AxisType::kLoop &&
        node->arg().axis_type != AxisType::kReduce) {
      return true;
    }
  }
  return false;
}

// A custom kernel's register arrays (DEFINE_REG) are one per thread: an upcast, unroll or split
// of a range they are used in would share one array among what were separate iterations. And
// the optimizer's ranges are INDEX: a split RANGE of a narrower dtype (tinygrad's
// UOp.range(n, dtype=dtypes.int)) would leave its uses mixing dtypes. Such kernels run as
// written (tinygrad's custom kernels, where both come from, ask for no opts either).
namespace {
bool RunsAsWritten(const KernelAst& ast) {
  for (const UOp* node : Toposort(ast.root)) {
    if (node->op() == Op::kDefineReg) return true;
    if (node->op() == Op::kRange && node->dtype().scalar != Scalar::kIndex) return true;
  }
  return false;
}
}  // namespace

absl::StatusOr<OptimizedKernel> OptimizeKernel(std::shared_ptr<const KernelAst> ast,
                                               const OptTarget& target,
                                               const OptimizeRequest& request) {
  if (request.mode == OptMode::kNone) return OptimizedKernel{std::move(ast), {}};
  if (RunsAsWritten(*ast)) {
    if (request.mode == OptMode::kOpts && !request.opts.empty()) {
      return absl::InvalidArgumentError(
          "opts_to_apply: a kernel with register arrays (DEFINE_REG) or a RANGE of a dtype other "
          "than index runs as written");
    }
    return OptimizedKernel{std::move(ast), {}};
  }
  // Opt axes are numbered on the graph tinygrad's pre-optimization passes make (merged, split
  // and cut ranges), so opts and heuristics start from it. An already optimized AST went
  // through them before its opts were applied.
  const bool optimized = IsAlreadyOptimized(*ast);
  if (request.mode == OptMode::kOpts) {
    if (request.opts.empty()) return OptimizedKernel{std::move(ast), {}};
    Scheduler scheduler(optimized ? *ast : *RunPreOptPasses(ast, target), target);
    for (size_t i = 0; i < request.opts.size(); ++i) {
      if (absl::Status applied = scheduler.Apply(request.opts[i]); !applied.ok()) {
        return absl::Status(applied.code(),
                            absl::StrCat("opts_to_apply[", i, "] (", request.opts[i].ToString(),
                                         "): ", applied.message()));
      }
    }
    return OptimizedKernel{scheduler.Finish(), scheduler.applied()};
  }
  // The heuristics (also what a search starts from). When they choose nothing the kernel runs as
  // written, so "no opts" names one compiled kernel whatever the mode.
  if (optimized) return OptimizedKernel{std::move(ast), {}};
  Scheduler scheduler(*RunPreOptPasses(ast, target), target);
  ApplyHeuristics(scheduler, ast);
  if (scheduler.applied().empty()) return OptimizedKernel{std::move(ast), {}};
  return OptimizedKernel{scheduler.Finish(), scheduler.applied()};
}

std::vector<std::vector<Opt>> HeuristicContendersFor(const std::shared_ptr<const KernelAst>& ast,
                                                     const OptTarget& target) {
  // Nothing is timed for kernels too large to rank (before the pre-optimization passes, which
  // cost as much as the rest of a large kernel's optimization).
  if (IsAlreadyOptimized(*ast) || RunsAsWritten(*ast) ||
      Toposort(ast->root).size() > kMaxRankedNodes) {
    return {};
  }
  Scheduler scheduler(*RunPreOptPasses(ast, target), target);
  return HeuristicContenders(scheduler, ast);
}

}  // namespace uopd
