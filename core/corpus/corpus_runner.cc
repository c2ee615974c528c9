#include "core/corpus/corpus_runner.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/corpus/compare.h"
#include "core/ir/kernel_ast.h"
#include "core/util/status_macros.h"
#include "core/wire/decode.h"

namespace uopd {
namespace {

absl::StatusOr<BufferView> CreateBuffer(Device& device, const v1::CorpusBuffer& buffer) {
  Scalar dtype = static_cast<Scalar>(buffer.dtype());
  size_t bytes = static_cast<size_t>(buffer.size() * ScalarItemSize(dtype));
  if (!buffer.init().empty() && buffer.init().size() != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer init has ", buffer.init().size(), " bytes, expected ", bytes));
  }
  UOPD_ASSIGN_OR_RETURN(auto storage, DeviceBuffer::Create(device, bytes));
  if (!buffer.init().empty()) {
    UOPD_RETURN_IF_ERROR(device.allocator().CopyIn(storage->data(), buffer.init().data(), bytes));
  }
  return BufferView::Whole(std::move(storage), dtype);
}

absl::StatusOr<std::string> ReadBuffer(const BufferView& view) {
  std::string out(view.bytes(), '\0');
  UOPD_RETURN_IF_ERROR(
      view.storage->device().allocator().CopyOut(out.data(), view.data(), view.bytes()));
  return out;
}

// Builds and runs a plan over `buffers` (returns after the run).
absl::Status RunAsPlan(Device& device, std::vector<BufferView> buffers,
                       std::vector<KernelBinding> kernels,
                       const absl::flat_hash_map<std::string, int64_t>& vars,
                       const CorpusRunOptions& options) {
  for (KernelBinding& k : kernels) {
    k.device = &device;
    k.optimization = options.optimization;
  }
  UOPD_ASSIGN_OR_RETURN(auto plan, ExecutionPlan::Build(std::move(buffers), std::move(kernels),
                                                        *options.source, options.pool));
  // Corpus files give every variable of the program; pass only those some kernel takes.
  absl::flat_hash_map<std::string, int64_t> used;
  for (const RuntimeVar& var : plan->RuntimeVars()) {
    if (auto it = vars.find(var.name); it != vars.end()) used.insert(*it);
  }
  RunOptions run;
  run.sequential = options.sequential;
  return plan->ExecuteWithVars(used, run).status();
}

Tolerance ToleranceOf(const v1::CorpusTolerance& t) { return Tolerance{t.rtol(), t.atol()}; }

absl::Status Check(const BufferView& view, const std::string& expected, Tolerance tolerance,
                   absl::string_view what) {
  UOPD_ASSIGN_OR_RETURN(std::string got, ReadBuffer(view));
  if (auto diff = CompareBuffers(view.dtype, got, expected, tolerance)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", *diff));
  }
  return absl::OkStatus();
}

absl::Status RunCase(Device& device, const v1::CorpusCase& kase, const CorpusRunOptions& options) {
  std::vector<BufferView> buffers;
  absl::flat_hash_map<int64_t, int> by_slot;
  KernelBinding kernel;
  UOPD_ASSIGN_OR_RETURN(kernel.ast, DecodeKernelAst(kase.ast()));
  for (const v1::CorpusBuffer& buffer : kase.buffers()) {
    if (buffer.slot() < 0 || buffer.slot() > 4096) return absl::InvalidArgumentError("bad slot");
    UOPD_ASSIGN_OR_RETURN(BufferView view, CreateBuffer(device, buffer));
    by_slot[buffer.slot()] = static_cast<int>(buffers.size());
    if (kernel.buffers.size() <= static_cast<size_t>(buffer.slot()))
      kernel.buffers.resize(buffer.slot() + 1, -1);
    kernel.buffers[buffer.slot()] = static_cast<int>(buffers.size());
    buffers.push_back(std::move(view));
  }
  absl::flat_hash_map<std::string, int64_t> vars(kase.vars().begin(), kase.vars().end());
  std::vector<BufferView> kept = buffers;
  UOPD_RETURN_IF_ERROR(RunAsPlan(device, std::move(buffers), {std::move(kernel)}, vars, options));
  for (const v1::CorpusOutput& output : kase.outputs()) {
    auto it = by_slot.find(output.slot());
    if (it == by_slot.end()) return absl::InvalidArgumentError("output names an unknown slot");
    UOPD_RETURN_IF_ERROR(Check(kept[it->second], output.expected(), ToleranceOf(kase.tolerance()),
                               absl::StrCat("slot ", output.slot())));
  }
  return absl::OkStatus();
}

// Runs the plan; fills `views` (by plan buffer id) with its buffers.
absl::Status RunPlanInto(Device& device, const v1::CorpusPlan& plan,
                         const CorpusRunOptions& options,
                         absl::flat_hash_map<int64_t, BufferView>& views) {
  std::vector<BufferView> buffers;
  absl::flat_hash_map<int64_t, int> index;
  for (const v1::CorpusBuffer& buffer : plan.buffers()) {
    UOPD_ASSIGN_OR_RETURN(BufferView view, CreateBuffer(device, buffer));
    index[buffer.id()] = static_cast<int>(buffers.size());
    views[buffer.id()] = view;
    buffers.push_back(std::move(view));
  }
  std::vector<KernelBinding> kernels;
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const v1::CorpusKernel& wire = plan.kernels(k);
    KernelBinding kernel;
    auto ast = DecodeKernelAst(wire.ast());
    if (!ast.ok()) return WithContext(ast.status(), absl::StrCat("kernel ", k));
    kernel.ast = *std::move(ast);
    for (int64_t id : wire.bufs()) {
      auto it = index.find(id);
      if (it == index.end())
        return absl::InvalidArgumentError(absl::StrCat("unknown buffer id ", id));
      kernel.buffers.push_back(it->second);
    }
    kernel.fixedvars.insert(wire.vars().begin(), wire.vars().end());
    kernels.push_back(std::move(kernel));
  }
  absl::flat_hash_map<std::string, int64_t> vars(plan.vars().begin(), plan.vars().end());
  return RunAsPlan(device, std::move(buffers), std::move(kernels), vars, options);
}

absl::Status RunPlan(Device& device, const v1::CorpusPlan& plan, const CorpusRunOptions& options) {
  absl::flat_hash_map<int64_t, BufferView> views;
  UOPD_RETURN_IF_ERROR(RunPlanInto(device, plan, options, views));
  for (const v1::CorpusOutput& output : plan.outputs()) {
    auto it = views.find(output.id());
    if (it == views.end()) return absl::InvalidArgumentError("output names an unknown buffer");
    UOPD_RETURN_IF_ERROR(Check(it->second, output.expected(), ToleranceOf(plan.tolerance()),
                               absl::StrCat("buffer ", output.id())));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunCorpusEntry(Device& device, const CorpusEntry& entry,
                            const CorpusRunOptions& options) {
  return entry.is_plan ? RunPlan(device, entry.plan, options)
                       : RunCase(device, entry.kase, options);
}

absl::StatusOr<absl::flat_hash_map<int64_t, std::string>> RunCorpusPlan(
    Device& device, const v1::CorpusPlan& plan, const CorpusRunOptions& options) {
  absl::flat_hash_map<int64_t, BufferView> views;
  UOPD_RETURN_IF_ERROR(RunPlanInto(device, plan, options, views));
  absl::flat_hash_map<int64_t, std::string> bytes;
  for (const auto& [id, view] : views) {
    UOPD_ASSIGN_OR_RETURN(bytes[id], ReadBuffer(view));
  }
  return bytes;
}

absl::StatusOr<std::vector<double>> TimeCorpusPlan(Device& device, const v1::CorpusPlan& plan,
                                                   const CorpusRunOptions& options, int runs,
                                                   double rtol, double atol) {
  std::vector<BufferView> buffers;
  absl::flat_hash_map<int64_t, BufferView> views;
  absl::flat_hash_map<int64_t, int> index;
  for (const v1::CorpusBuffer& buffer : plan.buffers()) {
    UOPD_ASSIGN_OR_RETURN(BufferView view, CreateBuffer(device, buffer));
    index[buffer.id()] = static_cast<int>(buffers.size());
    views[buffer.id()] = view;
    buffers.push_back(std::move(view));
  }
  std::vector<KernelBinding> kernels;
  for (const v1::CorpusKernel& wire : plan.kernels()) {
    KernelBinding kernel;
    UOPD_ASSIGN_OR_RETURN(kernel.ast, DecodeKernelAst(wire.ast()));
    for (int64_t id : wire.bufs()) kernel.buffers.push_back(index.at(id));
    kernel.device = &device;
    kernel.optimization = options.optimization;
    kernels.push_back(std::move(kernel));
  }
  UOPD_ASSIGN_OR_RETURN(auto built, ExecutionPlan::Build(std::move(buffers), std::move(kernels),
                                                         *options.source, options.pool));
  absl::flat_hash_map<std::string, int64_t> vars(plan.vars().begin(), plan.vars().end());
  RunOptions run;
  run.sequential = true;  // kernel times add up without overlap
  UOPD_RETURN_IF_ERROR(built->ExecuteWithVars(vars, run).status());
  for (const v1::CorpusOutput& output : plan.outputs()) {
    UOPD_RETURN_IF_ERROR(Check(views.at(output.id()), output.expected(), Tolerance{rtol, atol},
                               absl::StrCat("buffer ", output.id())));
  }
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    UOPD_ASSIGN_OR_RETURN(std::vector<KernelTiming> timings, built->ExecuteWithVars(vars, run));
    int64_t total = 0;
    for (const KernelTiming& t : timings) total += t.end_ns - t.start_ns;
    seconds.push_back(static_cast<double>(total) * 1e-9);
  }
  return seconds;
}

}  // namespace uopd
