#include "core/corpus/corpus_runner.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/corpus/compare.h"
#include "core/ir/kernel_ast.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// Buffers allocated on a device, freed when the run ends.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(Allocator& allocator) : allocator_(allocator) {}
  ~DeviceBuffers() {
    for (auto& [ptr, bytes] : owned_) allocator_.Free(ptr, bytes);
  }

  absl::StatusOr<void*> Create(const v1::CorpusBuffer& buffer) {
    int64_t item = ScalarItemSize(static_cast<Scalar>(buffer.dtype()));
    size_t bytes = static_cast<size_t>(buffer.size() * item);
    if (!buffer.init().empty() && buffer.init().size() != bytes) {
      return absl::InvalidArgumentError(absl::StrCat("buffer init has ", buffer.init().size(),
                                                     " bytes, expected ", bytes));
    }
    UOPD_ASSIGN_OR_RETURN(void* ptr, allocator_.Allocate(bytes));
    owned_.push_back({ptr, bytes});
    if (!buffer.init().empty()) UOPD_RETURN_IF_ERROR(allocator_.CopyIn(ptr, buffer.init().data(), bytes));
    return ptr;
  }

  absl::StatusOr<std::string> Read(void* ptr, size_t bytes) {
    std::string out(bytes, '\0');
    UOPD_RETURN_IF_ERROR(allocator_.CopyOut(out.data(), ptr, bytes));
    return out;
  }

 private:
  Allocator& allocator_;
  std::vector<std::pair<void*, size_t>> owned_;
};

// Renders, compiles, loads and runs one kernel on `buffers` (by slot).
absl::Status RunKernel(Device& device, const v1::Graph& wire, const std::vector<void*>& buffers,
                       const absl::flat_hash_map<std::string, int64_t>& vars) {
  UOPD_ASSIGN_OR_RETURN(auto ast, DecodeKernelAst(wire));
  UOPD_ASSIGN_OR_RETURN(ProgramSpec spec, device.renderer().Render(ast, ast->DefaultName()));
  if (spec.buf_count > static_cast<int>(buffers.size())) {
    return absl::InvalidArgumentError(absl::StrCat("kernel ", spec.name, " has ", spec.buf_count,
                                                   " buffer slots, ", buffers.size(), " given"));
  }
  UOPD_ASSIGN_OR_RETURN(CompiledKernel compiled, device.compiler().Compile(spec));
  UOPD_ASSIGN_OR_RETURN(auto program, device.runtime().Load(compiled, spec));
  UOPD_ASSIGN_OR_RETURN(LaunchDims dims, spec.launch_dims(vars));
  std::vector<int64_t> vals;
  for (const std::string& name : spec.var_names) {
    auto it = vars.find(name);
    vals.push_back(it == vars.end() ? 0 : it->second);
  }
  return program->Execute(buffers, vals, dims);
}

Tolerance ToleranceOf(const v1::CorpusTolerance& t) { return Tolerance{t.rtol(), t.atol()}; }

absl::Status Check(Scalar scalar, int64_t size, DeviceBuffers& owner, void* ptr,
                   const std::string& expected, Tolerance tolerance, absl::string_view what) {
  UOPD_ASSIGN_OR_RETURN(std::string got, owner.Read(ptr, size * ScalarItemSize(scalar)));
  if (auto diff = CompareBuffers(scalar, got, expected, tolerance)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", *diff));
  }
  return absl::OkStatus();
}

absl::Status RunCase(Device& device, const v1::CorpusCase& kase) {
  DeviceBuffers owner(device.allocator());
  std::vector<void*> by_slot;
  absl::flat_hash_map<int64_t, const v1::CorpusBuffer*> meta;
  for (const v1::CorpusBuffer& buffer : kase.buffers()) {
    if (buffer.slot() < 0 || buffer.slot() > 4096) return absl::InvalidArgumentError("bad slot");
    if (by_slot.size() <= static_cast<size_t>(buffer.slot())) by_slot.resize(buffer.slot() + 1);
    UOPD_ASSIGN_OR_RETURN(by_slot[buffer.slot()], owner.Create(buffer));
    meta[buffer.slot()] = &buffer;
  }
  absl::flat_hash_map<std::string, int64_t> vars(kase.vars().begin(), kase.vars().end());
  UOPD_RETURN_IF_ERROR(RunKernel(device, kase.ast(), by_slot, vars));
  for (const v1::CorpusOutput& output : kase.outputs()) {
    auto it = meta.find(output.slot());
    if (it == meta.end()) return absl::InvalidArgumentError("output names an unknown slot");
    UOPD_RETURN_IF_ERROR(Check(static_cast<Scalar>(it->second->dtype()), it->second->size(), owner,
                               by_slot[output.slot()], output.expected(), ToleranceOf(kase.tolerance()),
                               absl::StrCat("slot ", output.slot())));
  }
  return absl::OkStatus();
}

absl::Status RunPlan(Device& device, const v1::CorpusPlan& plan) {
  DeviceBuffers owner(device.allocator());
  absl::flat_hash_map<int64_t, void*> by_id;
  absl::flat_hash_map<int64_t, const v1::CorpusBuffer*> meta;
  for (const v1::CorpusBuffer& buffer : plan.buffers()) {
    UOPD_ASSIGN_OR_RETURN(by_id[buffer.id()], owner.Create(buffer));
    meta[buffer.id()] = &buffer;
  }
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const v1::CorpusKernel& kernel = plan.kernels(k);
    std::vector<void*> slots;
    for (int64_t id : kernel.bufs()) {
      auto it = by_id.find(id);
      if (it == by_id.end()) return absl::InvalidArgumentError(absl::StrCat("unknown buffer id ", id));
      slots.push_back(it->second);
    }
    absl::flat_hash_map<std::string, int64_t> vars(plan.vars().begin(), plan.vars().end());
    for (const auto& [name, value] : kernel.vars()) vars[name] = value;
    UOPD_RETURN_IF_ERROR(WithContext(RunKernel(device, kernel.ast(), slots, vars),
                                     absl::StrCat("kernel ", k)));
  }
  for (const v1::CorpusOutput& output : plan.outputs()) {
    auto it = meta.find(output.id());
    if (it == meta.end()) return absl::InvalidArgumentError("output names an unknown buffer");
    UOPD_RETURN_IF_ERROR(Check(static_cast<Scalar>(it->second->dtype()), it->second->size(), owner,
                               by_id[output.id()], output.expected(), ToleranceOf(plan.tolerance()),
                               absl::StrCat("buffer ", output.id())));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunCorpusEntry(Device& device, const CorpusEntry& entry) {
  return entry.is_plan ? RunPlan(device, entry.plan) : RunCase(device, entry.kase);
}

}  // namespace uopd
