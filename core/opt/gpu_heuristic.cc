#include "core/opt/gpu_heuristic.h"

#include <algorithm>

#include "core/codegen/pipeline.h"
#include "core/ir/value_range.h"
#include "core/opt/column_split.h"
#include "core/opt/heuristic.h"
#include "core/opt/tinygrad_heuristic.h"
#include "core/util/large_stack.h"

namespace uopd {
namespace {

// Whether the kernel as written is one whose reduction a warp's lanes share (uopd's GPU row
// reduction, core/codegen/warp_reduction.h): its loads are contiguous along the reduction, and
// tinygrad's opts for it (upcasts and locals, no group for large outputs) would give each output
// a thread of its own again, reading a row apart from its neighbours.
bool WarpsShareAsWritten(const Scheduler& scheduler) {
  const OptTarget& target = scheduler.target();
  if (target.warp_lanes <= 0) return false;
  CodegenTarget gpu = CodegenTarget::CudaGrid();
  auto kernel = LowerForTarget(scheduler.Finish(/*hash=*/false), "k", gpu, {});
  return kernel.ok() && kernel->warps.enabled;
}

// A row reduction the warp's lanes share, with its reduction unrolled by 4 as vector lanes:
// each lane reads 16 bytes a load (float4) and the warp 512 neighbouring bytes, a quarter of
// the load instructions. Applied where the lanes still share it and the load is kept whole
// (whether it was).
bool WidenWarpSharedLoads(Scheduler& scheduler) {
  const Opt unroll{OptOp::kUnroll, 0, 4};
  Scheduler trial(*scheduler.Finish(/*hash=*/false), scheduler.target());
  if (!trial.Apply(unroll).ok()) return false;
  auto kernel = LowerForTarget(trial.Finish(/*hash=*/false), "k", CodegenTarget::CudaGrid(), {});
  if (!kernel.ok() || !kernel->warps.enabled) return false;
  const std::vector<Instr>& instrs = kernel->program.instrs;
  const bool vector_load = std::any_of(instrs.begin(), instrs.end(), [&](const Instr& in) {
    return in.kind == InstrKind::kLoad && in.dtype.count == unroll.arg;
  });
  // Cannot fail: it applied to the same AST.
  return vector_load && scheduler.Apply(unroll).ok();
}

}  // namespace

void ApplyGpuHeuristics(Scheduler& scheduler) {
  if (Toposort(scheduler.root()).size() > kMaxRankedNodes) return;  // as written
  if (TryTensorCores(scheduler)) return;  // tinygrad's first choice, before any of uopd's
  if (OnCompileStack([&] { return WarpsShareAsWritten(scheduler); })) {
    OnCompileStack([&] { return WidenWarpSharedLoads(scheduler); });
    return;
  }
  if (SplitColumnReduction(scheduler)) return;
  ApplyTinygradHeuristics(scheduler);
}

namespace {

// Every iteration of the kernel's loops, or 0 when a range's size is not a constant.
double Iterations(const Scheduler& scheduler) {
  double product = 1;
  for (const UOp* axis : scheduler.Axes()) {
    if (!axis->src(0)->IsConst()) return 0;
    product *= static_cast<double>(ConstIntValue(*axis->src(0)));
  }
  return product;
}

}  // namespace

std::vector<std::vector<Opt>> GpuHeuristicContenders(const Scheduler& scheduler) {
  if (Toposort(scheduler.root()).size() > kMaxRankedNodes) return {};
  const std::shared_ptr<const KernelAst> base = scheduler.Finish(/*hash=*/false);
  auto chosen = [&](const OptTarget& target, void (*heuristics)(Scheduler&)) {
    Scheduler s(*base, target);
    heuristics(s);
    return s.applied();
  };
  std::vector<std::vector<Opt>> out = {chosen(scheduler.target(), ApplyGpuHeuristics)};
  const bool tensor_cores = std::any_of(out.front().begin(), out.front().end(),
                                        [](const Opt& opt) { return opt.op == OptOp::kTc; });
  if (!tensor_cores && Iterations(scheduler) < kGpuTimedIterations) return out;
  auto add = [&](std::vector<Opt> opts) {
    if (std::find(out.begin(), out.end(), opts) == out.end()) out.push_back(std::move(opts));
  };
  add(chosen(scheduler.target(), ApplyTinygradHeuristics));
  OptTarget without_cores = scheduler.target();
  without_cores.tensor_cores.clear();
  add(chosen(without_cores, ApplyTinygradHeuristics));
  if (OnCompileStack([&] { return WarpsShareAsWritten(scheduler); })) add({});
  return out;
}

}  // namespace uopd
