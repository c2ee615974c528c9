#include "core/codegen/cpu_lowering.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "core/codegen/expand.h"
#include "core/codegen/lower.h"
#include "core/codegen/tinygrad_algebra.h"
#include "core/codegen/transcendental.h"
#include "core/codegen/vector_range.h"
#include "core/ir/copy_expression.h"
#include "core/ir/symbolic.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// tinygrad simplifies the kernel again once its UPCAST and UNROLL ranges are written out
// (`sym` with the expander): with a window's offsets now constants, index arithmetic folds and
// the masks of impossible window positions become false (LLVM then drops what they guard: a
// pooling's gradient keeps 4 of its 9 terms). Only expressions that read no memory are
// rewritten, so every access the kernel makes, and the bounds error of one out of range, stays
// as the IR defines it; tinygrad's float rewrites are left out as everywhere
// (core/ir/symbolic.h).
std::shared_ptr<const KernelAst> SimplifyExpanded(std::shared_ptr<const KernelAst> ast) {
  // A kernel far larger than any a framework schedules is rendered as it is: rewriting it would
  // take longer than the speed it may gain is worth, on the request's path.
  if (Toposort(ast->root).size() > 20000) return ast;
  Graph work;
  const UOp* root = CopyExpression(work, ast->root);
  SymbolicRewriter sym(work);
  absl::flat_hash_map<const UOp*, bool> pure;  // reads no memory, has no effect
  auto allowed = [](Op op) {
    return IsAlu(op) || op == Op::kConst || op == Op::kRange || op == Op::kDefineVar ||
           op == Op::kCast || op == Op::kBitcast;
  };
  auto compute = [&](const UOp* x) {  // REQUIRES: x's sources are known
    bool p = allowed(x->op());
    for (const UOp* s : x->src()) p = p && pure.at(s);
    return pure[x] = p;
  };
  auto is_pure = [&](const UOp* n) {
    if (auto it = pure.find(n); it != pure.end()) return it->second;
    // The rewrite visits sources first, so they are usually known already.
    if (std::all_of(n->src().begin(), n->src().end(),
                    [&](const UOp* s) { return pure.contains(s); })) {
      return compute(n);
    }
    for (const UOp* x : Toposort(n)) {
      if (!pure.contains(x)) compute(x);
    }
    return pure.at(n);
  };
  root = sym.Rewrite(
      root, [&](const UOp* n) -> const UOp* { return is_pure(n) ? sym.SymRule(n) : nullptr; });
  // An access whose guard folded to false indexes Invalid: spelled as a guard the lowering
  // takes (a load of 0, a store that does not happen).
  Graph& g = sym.graph();
  root = sym.Rewrite(root, [&](const UOp* n) -> const UOp* {
    if (n->op() != Op::kIndex || n->num_src() < 2 || !n->src(1)->IsInvalid()) return nullptr;
    const UOp* invalid = n->src(1);
    const UOp* guarded = g.Make(Op::kWhere, invalid->dtype(),
                                {g.Make(Op::kConst, DType::Of(Scalar::kBool), {}, Arg::Bool(false)),
                                 g.Make(Op::kConst, invalid->dtype(), {}, Arg::I64(0)), invalid});
    std::vector<const UOp*> src(n->src().begin(), n->src().end());
    src[1] = guarded;
    return g.Make(n->op(), n->dtype(), std::move(src), n->arg());
  });
  if (!sym.status().ok()) return ast;
  auto out = std::make_shared<KernelAst>();
  out->root = CopyExpression(out->graph, root);
  out->hash = ast->hash;
  return out;
}

}  // namespace

absl::StatusOr<CpuLowering> LowerCpuKernel(std::shared_ptr<const KernelAst> ast,
                                           const std::string& name,
                                           const CpuLoweringOptions& options) {
  LowerOptions lower_options;
  lower_options.min_parallel_work = options.gpu_lowering ? 0 : options.min_parallel_work;
  lower_options.gpu_grid = options.gpu_lowering;
  // EXP2 and LOG2 as arithmetic: a libm call per element would keep loops scalar.
  std::shared_ptr<const KernelAst> decomposed = DecomposeTranscendentals(ApplyTinygradAlgebra(ast));
  // One UPCAST or UNROLL range along contiguous memory becomes vector lanes; the others are
  // written out (register tiles, unrolled reductions).
  ExpandOptions expand;
  if (!options.gpu_lowering) expand.keep = ChooseVectorRange(*decomposed, kMaxVectorLanes);
  CpuLowering out;
  out.expanded = ExpandRanges(decomposed, expand);
  if (out.expanded != decomposed) out.expanded = SimplifyExpanded(out.expanded);
  if (expand.keep != nullptr) {
    lower_options.vector_range = FindRange(*out.expanded, expand.keep->arg());
  }
  UOPD_ASSIGN_OR_RETURN(out.program, LowerKernel(*out.expanded, name, lower_options));
  return out;
}

}  // namespace uopd
