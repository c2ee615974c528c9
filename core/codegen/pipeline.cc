#include "core/codegen/pipeline.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "core/codegen/consecutive_loads.h"
#include "core/codegen/devectorize.h"
#include "core/codegen/expand.h"
#include "core/codegen/fuse_multiply_adds.h"
#include "core/codegen/legalize.h"
#include "core/codegen/lower.h"
#include "core/codegen/program_spec_builder.h"
#include "core/codegen/tinygrad_algebra.h"
#include "core/codegen/transcendental.h"
#include "core/codegen/vector_range.h"
#include "core/codegen/wmma.h"
#include "core/codegen/wmma_accumulate.h"
#include "core/codegen/work_group_loops.h"
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

// Whether `program` has an instruction of one of `kinds`.
bool HasInstr(const LinearProgram& program, std::initializer_list<InstrKind> kinds) {
  return std::any_of(program.instrs.begin(), program.instrs.end(), [&](const Instr& in) {
    return std::find(kinds.begin(), kinds.end(), in.kind) != kinds.end();
  });
}

// Whether the kernel has a GROUP_REDUCE range.
bool HasGroupRange(const KernelAst& ast) {
  const std::vector<const UOp*> nodes = Toposort(ast.root);
  return std::any_of(nodes.begin(), nodes.end(), [](const UOp* n) {
    return n->op() == Op::kRange && n->arg().axis_type == AxisType::kGroupReduce;
  });
}

// ceil(product of `ends` / block) as a launch dimension.
SymbolicDim GridBlocks(const std::vector<const UOp*>& ends, int block) {
  SymbolicDim dim;
  bool constant = true;
  Int128 product = 1;
  for (const UOp* end : ends) {
    if (!end->IsConst()) {
      constant = false;
      break;
    }
    product *= std::max<Int128>(0, ConstIntValue(*end));
  }
  if (constant) {
    dim.constant = static_cast<int64_t>((product + block - 1) / block);
    return dim;
  }
  auto graph = std::make_shared<Graph>();
  const DType index = DType::Of(Scalar::kIndex);
  // Each end at least 0, as the grid index takes it (Lowerer::EmitGridIndex).
  auto at_least_zero = [&](const UOp* end) {
    return graph->Make(Op::kMax, index,
                       {CopyExpression(*graph, end), graph->ConstInt(Scalar::kIndex, 0)});
  };
  const UOp* total = at_least_zero(ends[0]);
  for (size_t i = 1; i < ends.size(); ++i) {
    total = graph->Make(Op::kMul, index, {total, at_least_zero(ends[i])});
  }
  const UOp* rounded =
      graph->Make(Op::kAdd, index, {total, graph->ConstInt(Scalar::kIndex, block - 1)});
  dim.expr = graph->Make(Op::kIdiv, index, {rounded, graph->ConstInt(Scalar::kIndex, block)});
  dim.owner = std::move(graph);
  return dim;
}

}  // namespace

absl::StatusOr<LinearKernel> LowerToLinear(std::shared_ptr<const KernelAst> ast,
                                           const std::string& name, const CodegenTarget& target) {
  const bool grid = target.parallelism == CodegenTarget::Parallelism::kGrid;
  LowerOptions lower;
  lower.min_parallel_work = grid ? 0 : target.min_parallel_work;
  lower.gpu_grid = grid;
  lower.group_threads = grid ? target.group_threads : 0;
  lower.shared_bytes = target.shared_bytes;
  std::shared_ptr<const KernelAst> algebra = ApplyTinygradAlgebra(std::move(ast));
  if (target.decompose_transcendentals) algebra = DecomposeTranscendentals(algebra);
  // One UPCAST or UNROLL range along contiguous memory becomes vector lanes; the others are
  // written out (register tiles, unrolled reductions).
  ExpandOptions expand;
  const bool tensor_core = HasWmma(*algebra);  // its fragment ranges are lanes of their own
  // A GROUP reduction meets in shared memory one element per thread (LowerOptions::
  // group_threads): there its kernel stays scalar.
  const bool group = lower.group_threads > 0 && HasGroupRange(*algebra);
  if (target.max_vector_lanes > 0 && !tensor_core && !group)
    expand.keep = ChooseVectorRange(*algebra, target.max_vector_lanes);
  LinearKernel out;
  UOPD_ASSIGN_OR_RETURN(out.expanded, ExpandRanges(algebra, expand));
  const std::shared_ptr<const KernelAst> expanded = out.expanded;
  if (tensor_core && !target.spells_wmma) {
    UOPD_ASSIGN_OR_RETURN(out.expanded, DecomposeWmma(out.expanded));
  }
  if (out.expanded != algebra) out.expanded = SimplifyExpanded(out.expanded);
  if (expand.keep != nullptr) lower.vector_range = FindRange(*out.expanded, expand.keep->arg());
  absl::StatusOr<LinearProgram> program = LowerKernel(*out.expanded, name, lower);
  if (tensor_core && target.spells_wmma &&
      (program.ok() ? HasInstr(*program, {InstrKind::kCheckBounds})
                    : absl::IsFailedPrecondition(program.status()))) {
    // The instruction needs the whole warp as 32 neighbouring threads: where the warp is not
    // the grid's fastest range (a loop in a thread), or where a failed bounds check may end a
    // thread before it, the instructions are written out.
    UOPD_ASSIGN_OR_RETURN(out.expanded, DecomposeWmma(expanded));
    out.expanded = SimplifyExpanded(out.expanded);
    program = LowerKernel(*out.expanded, name, lower);
  }
  UOPD_ASSIGN_OR_RETURN(out.program, std::move(program));
  return out;
}

absl::StatusOr<LoweredKernel> LowerForTarget(std::shared_ptr<const KernelAst> ast,
                                             const std::string& name, const CodegenTarget& target,
                                             const RenderOptions& options) {
  UOPD_ASSIGN_OR_RETURN(LinearKernel linear, LowerToLinear(std::move(ast), name, target));
  LoweredKernel out;
  out.expanded = std::move(linear.expanded);
  out.program = std::move(linear.program);
  if (target.spells_vector) out.program = Devectorize(out.program, target.spells_vector);
  if (target.fused_load_bytes > 0)
    out.program = FuseConsecutiveLoads(out.program, target.fused_load_bytes);
  out.program = Legalize(out.program);
  if (target.spells_wmma) out.program = FoldWmmaAccumulators(out.program);
  if (options.allow_fma) out.program = FuseMultiplyAdds(out.program);
  if (target.GridRunsAsLoop()) {
    out.program = WorkGroupLoops(out.program);
    out.program.var_names.push_back(kCoreIdVar);
    out.program.var_names.push_back(kCoreCountVar);
  }
  out.loops = PlanLoops(out.program, target);
  // A block that meets in shared memory needs all its threads; warps would stop some early.
  // A tensor core instruction needs each lane of its warp to be a thread of its own.
  const bool tensor_core = HasInstr(out.program, {InstrKind::kWmma, InstrKind::kWmmaInto});
  if (target.warp_lanes > 0 && out.program.group_threads == 0 && !tensor_core)
    out.warps = PlanWarpReductions(out.program, target.warp_lanes);
  if (out.program.parallel) {
    out.global_size[0] = out.program.parallel_extent;
    out.global_size[0].owner = out.expanded;  // the extent's expression lives in that graph
  }
  if (target.block_threads > 0) {
    out.local_size.emplace();
    if (!out.program.grid_ends.empty()) {
      // Outputs per block: one per thread, or one per warp.
      const int per_block =
          out.warps.enabled ? target.block_threads / target.warp_lanes : target.block_threads;
      out.global_size[0] = GridBlocks(out.program.grid_ends, per_block);
      (*out.local_size)[0].constant = target.block_threads;
    }
  }
  return out;
}

absl::StatusOr<ProgramSpec> SpellingRenderer::RenderImpl(std::shared_ptr<const KernelAst> ast,
                                                         const std::string& name,
                                                         const RenderOptions& options) const {
  UOPD_ASSIGN_OR_RETURN(LoweredKernel kernel,
                        LowerForTarget(ast, SanitizeKernelName(name), target_, options));
  ProgramSpec spec = SpecFromLinearProgram(kernel.program, target_.device, std::move(ast));
  spec.global_size = kernel.global_size;
  spec.local_size = kernel.local_size;
  spec.src = Spell(kernel);
  return spec;
}

}  // namespace uopd
