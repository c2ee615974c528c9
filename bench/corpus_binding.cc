#include "bench/corpus_binding.h"

#include "core/opt/preopt.h"
#include "core/opt/scheduler.h"
#include "core/util/status_macros.h"
#include "core/wire/decode.h"

namespace uopd::bench {

namespace {

absl::StatusOr<BufferView> CreateBuffer(Device& device, const v1::CorpusBuffer& buffer) {
  auto dtype = static_cast<Scalar>(buffer.dtype());
  size_t bytes = static_cast<size_t>(buffer.size() * ScalarItemSize(dtype));
  UOPD_ASSIGN_OR_RETURN(auto storage, DeviceBuffer::Create(device, bytes));
  if (buffer.init().size() == bytes) {
    UOPD_RETURN_IF_ERROR(device.allocator().CopyIn(storage->data(), buffer.init().data(), bytes));
  }
  return BufferView::Whole(std::move(storage), dtype);
}

}  // namespace

absl::StatusOr<Bound> Bind(Device& device, const CorpusEntry& entry) {
  Bound out;
  if (!entry.is_plan) {
    const v1::CorpusCase& kase = entry.kase;
    KernelBinding kernel;
    UOPD_ASSIGN_OR_RETURN(kernel.ast, DecodeKernelAst(kase.ast()));
    for (const v1::CorpusBuffer& buffer : kase.buffers()) {
      if (buffer.slot() < 0 || buffer.slot() > 4096) return absl::InvalidArgumentError("bad slot");
      UOPD_ASSIGN_OR_RETURN(BufferView view, CreateBuffer(device, buffer));
      if (kernel.buffers.size() <= static_cast<size_t>(buffer.slot()))
        kernel.buffers.resize(buffer.slot() + 1, -1);
      kernel.buffers[buffer.slot()] = static_cast<int>(out.buffers.size());
      out.buffers.push_back(std::move(view));
    }
    out.kernels.push_back(std::move(kernel));
    out.vars.insert(kase.vars().begin(), kase.vars().end());
    return out;
  }
  const v1::CorpusPlan& plan = entry.plan;
  absl::flat_hash_map<int64_t, int> index;
  for (const v1::CorpusBuffer& buffer : plan.buffers()) {
    UOPD_ASSIGN_OR_RETURN(BufferView view, CreateBuffer(device, buffer));
    index[buffer.id()] = static_cast<int>(out.buffers.size());
    out.buffers.push_back(std::move(view));
  }
  for (const v1::CorpusKernel& wire : plan.kernels()) {
    KernelBinding kernel;
    UOPD_ASSIGN_OR_RETURN(kernel.ast, DecodeKernelAst(wire.ast()));
    for (int64_t id : wire.bufs()) {
      auto it = index.find(id);
      if (it == index.end()) return absl::InvalidArgumentError("unknown buffer id");
      kernel.buffers.push_back(it->second);
    }
    kernel.fixedvars.insert(wire.vars().begin(), wire.vars().end());
    out.kernels.push_back(std::move(kernel));
  }
  out.vars.insert(plan.vars().begin(), plan.vars().end());
  return out;
}

absl::StatusOr<Built> Build(Device& device, ProgramSource& source, ThreadPool* pool, Bound bound,
                            OptMode mode) {
  for (KernelBinding& k : bound.kernels) {
    k.device = &device;
    k.optimization.mode = mode;
  }
  Built built;
  UOPD_ASSIGN_OR_RETURN(built.plan, ExecutionPlan::Build(std::move(bound.buffers),
                                                         std::move(bound.kernels), source, pool));
  absl::flat_hash_map<std::string, int64_t> used;  // only the variables some kernel takes
  for (const RuntimeVar& var : built.plan->RuntimeVars()) {
    if (auto it = bound.vars.find(var.name); it != bound.vars.end()) used.insert(*it);
  }
  RunOptions run;
  run.sequential = true;
  UOPD_RETURN_IF_ERROR(built.plan->ExecuteWithVars(used, run).status());
  for (const PreparedKernel& k : built.plan->kernels()) {
    absl::flat_hash_map<std::string, int64_t> merged;
    for (const VarInfo& var : k.program->spec->vars) {
      auto fixed = k.fixedvars.find(var.name);
      if (fixed != k.fixedvars.end()) {
        merged[var.name] = fixed->second;
      } else if (auto it = used.find(var.name); it != used.end()) {
        merged[var.name] = it->second;
      }
    }
    UOPD_ASSIGN_OR_RETURN(LaunchDims dims, k.program->spec->launch_dims(merged));
    built.dims.push_back(dims);
  }
  return built;
}

bool Built::Call(int k) const {
  const PreparedKernel& pk = plan->kernels()[k];
  return pk.program->program->Execute(pk.buffer_ptrs, pk.vals, dims[k], nullptr).ok();
}

absl::StatusOr<std::shared_ptr<const LoadedProgram>> OptimizingSource::Get(
    Device& device, std::shared_ptr<const KernelAst> ast, const OptimizeRequest& request,
    const StopFlag* stop) {
  OptimizeRequest none;
  none.mode = OptMode::kNone;
  none.render = request.render;
  if (opts_.empty()) return inner_.Get(device, std::move(ast), none, stop);
  // Opt axes are numbered on the graph the pre-optimization passes make (core/opt/optimize.h).
  Scheduler scheduler(*RunPreOptPasses(ast, target_), target_);
  for (const Opt& opt : opts_) UOPD_RETURN_IF_ERROR(scheduler.Apply(opt));
  return inner_.Get(device, scheduler.Finish(), none, stop);
}

}  // namespace uopd::bench
