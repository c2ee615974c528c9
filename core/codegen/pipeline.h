// The codegen pipeline: from a kernel AST to the linear program a backend spells, every decision
// made here from the target's description (core/codegen/codegen_target.h), none in backends/.
//
//   ApplyTinygradAlgebra -> [DecomposeTranscendentals] -> ExpandRanges (one range kept as
//   vector lanes) -> [DecomposeWmma] -> SimplifyExpanded -> LowerKernel (loops or a grid) ->
//   Devectorize -> [FuseConsecutiveLoads] -> Legalize -> [FoldWmmaAccumulators] ->
//   [FuseMultiplyAdds] -> plans: loops (stop checks, register tiles, branched loads), warp
//   reductions, launch dims.
//
// A renderer derives from SpellingRenderer, describes its target and spells the LoweredKernel
// it is given (tinygrad's `Renderer.render(uops)`).
#ifndef UOPD_CORE_CODEGEN_PIPELINE_H_
#define UOPD_CORE_CODEGEN_PIPELINE_H_

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/codegen/codegen_target.h"
#include "core/codegen/linear_program.h"
#include "core/codegen/loop_plan.h"
#include "core/codegen/warp_reduction.h"
#include "core/device/program_spec.h"
#include "core/device/renderer.h"
#include "core/ir/kernel_ast.h"

namespace uopd {

// The front half of the pipeline: the program before Devectorize and Legalize, which the
// optimizer's cost model estimates.
struct LinearKernel {
  std::shared_ptr<const KernelAst> expanded;  // the AST the program's instructions point into
  LinearProgram program;
};

struct LoweredKernel {
  std::shared_ptr<const KernelAst> expanded;  // the AST the program's instructions point into
  LinearProgram program;                      // only instructions the target spells
  LoopPlan loops;
  WarpReductionPlan warps;
  // kGrid targets with blocks: blocks and threads per block (possibly symbolic); kThreadLoops
  // targets that split the outer loop: its trip count in global_size[0].
  std::array<SymbolicDim, 3> global_size;
  std::optional<std::array<SymbolicDim, 3>> local_size;  // kGrid targets with blocks only
};

// Errors (both): INVALID_ARGUMENT naming the node for ASTs that cannot be lowered, UNIMPLEMENTED
// for constructs not supported yet. `name` must be a C identifier (SanitizeKernelName).
absl::StatusOr<LinearKernel> LowerToLinear(std::shared_ptr<const KernelAst> ast,
                                           const std::string& name, const CodegenTarget& target);
absl::StatusOr<LoweredKernel> LowerForTarget(std::shared_ptr<const KernelAst> ast,
                                             const std::string& name, const CodegenTarget& target,
                                             const RenderOptions& options);

// A renderer that spells what the pipeline decided: Render runs LowerForTarget with target()
// and fills the ProgramSpec; the subclass writes only the source. Immutable: safe for
// concurrent use.
class SpellingRenderer : public Renderer {
 public:
  explicit SpellingRenderer(CodegenTarget target) : target_(std::move(target)) {}
  const CodegenTarget& target() const { return target_; }

  // The source of `kernel`, whose program holds only instructions target() spells.
  virtual std::string Spell(const LoweredKernel& kernel) const = 0;

 private:
  absl::StatusOr<ProgramSpec> RenderImpl(std::shared_ptr<const KernelAst> ast,
                                         const std::string& name,
                                         const RenderOptions& options) const final;

  CodegenTarget target_;
};

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_PIPELINE_H_
