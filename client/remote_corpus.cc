#include "client/remote_corpus.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/corpus/compare.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

v1::BufferRef Inline(const v1::CorpusBuffer& buffer) {
  v1::BufferRef ref;
  ref.mutable_inline_()->set_dtype(buffer.dtype());
  ref.mutable_inline_()->set_size(buffer.size());
  ref.mutable_inline_()->set_data(buffer.init());
  return ref;
}

// What an output should hold, by request buffer index.
struct Expected {
  Scalar dtype;
  std::string bytes;
  std::string label;  // "slot 2" or "buffer 7", for messages
};

absl::Status Compare(const google::protobuf::RepeatedPtrField<v1::BufferData>& outputs,
                     const absl::flat_hash_map<int, Expected>& expected,
                     const v1::CorpusTolerance& tolerance) {
  for (const v1::BufferData& output : outputs) {
    auto it = expected.find(output.buffer());
    if (it == expected.end()) continue;
    auto diff = CompareBuffers(it->second.dtype, output.data(), it->second.bytes,
                               Tolerance{tolerance.rtol(), tolerance.atol()});
    if (diff) return absl::FailedPreconditionError(absl::StrCat(it->second.label, ": ", *diff));
  }
  return absl::OkStatus();
}

absl::Status RunCase(Client& client, const v1::CorpusCase& kase, const std::string& device,
                     const v1::Optimization& optimization) {
  v1::ExecuteRequest request;
  request.set_device(device);
  v1::KernelInvocation* kernel = request.add_kernels();
  *kernel->mutable_ast() = kase.ast();
  *kernel->mutable_optimization() = optimization;
  absl::flat_hash_map<int64_t, int> by_slot;
  absl::flat_hash_map<int, Expected> expected;
  for (const v1::CorpusBuffer& buffer : kase.buffers()) {
    by_slot[buffer.slot()] = request.buffers_size();
    *request.add_buffers() = Inline(buffer);
  }
  int64_t slots = 0;
  for (const auto& [slot, index] : by_slot) slots = std::max(slots, slot + 1);
  for (int64_t slot = 0; slot < slots; ++slot) {
    auto it = by_slot.find(slot);
    kernel->add_buffers(it == by_slot.end() ? -1 : it->second);
  }
  for (const v1::CorpusOutput& output : kase.outputs()) {
    auto it = by_slot.find(output.slot());
    if (it == by_slot.end()) return absl::InvalidArgumentError("output names an unknown slot");
    request.add_return_buffers(it->second);
    expected[it->second] = {static_cast<Scalar>(kase.buffers(it->second).dtype()),
                            output.expected(), absl::StrCat("slot ", output.slot())};
  }
  request.mutable_vars()->insert(kase.vars().begin(), kase.vars().end());
  UOPD_ASSIGN_OR_RETURN(v1::ExecuteResponse response, client.Execute(request));
  return Compare(response.outputs(), expected, kase.tolerance());
}

absl::Status RunPlan(Client& client, const v1::CorpusPlan& plan, const std::string& device,
                     const v1::Optimization& optimization) {
  v1::PrepareRequest prepare;
  prepare.set_device(device);
  absl::flat_hash_map<int64_t, int> by_id;
  for (const v1::CorpusBuffer& buffer : plan.buffers()) {
    by_id[buffer.id()] = prepare.buffers_size();
    *prepare.add_buffers() = Inline(buffer);
  }
  for (const v1::CorpusKernel& wire : plan.kernels()) {
    v1::KernelInvocation* kernel = prepare.add_kernels();
    *kernel->mutable_ast() = wire.ast();
    *kernel->mutable_optimization() = optimization;
    for (int64_t id : wire.bufs()) {
      auto it = by_id.find(id);
      if (it == by_id.end())
        return absl::InvalidArgumentError(absl::StrCat("unknown buffer id ", id));
      kernel->add_buffers(it->second);
    }
    kernel->mutable_fixedvars()->insert(wire.vars().begin(), wire.vars().end());
  }
  UOPD_ASSIGN_OR_RETURN(v1::PrepareResponse prepared, client.Prepare(prepare));
  v1::RunPlanRequest run;
  run.set_plan_id(prepared.plan_id());
  for (const v1::VarBounds& var : prepared.vars()) {
    auto it = plan.vars().find(var.name());
    if (it != plan.vars().end()) (*run.mutable_vars())[var.name()] = it->second;
  }
  absl::flat_hash_map<int, Expected> expected;
  for (const v1::CorpusOutput& output : plan.outputs()) {
    auto it = by_id.find(output.id());
    if (it == by_id.end()) return absl::InvalidArgumentError("output names an unknown buffer");
    run.add_return_buffers(it->second);
    expected[it->second] = {static_cast<Scalar>(plan.buffers(it->second).dtype()),
                            output.expected(), absl::StrCat("buffer ", output.id())};
  }
  auto response = client.RunPlan(run);
  absl::Status released = client.ReleasePlan(prepared.plan_id());
  if (!response.ok()) return response.status();
  UOPD_RETURN_IF_ERROR(released);
  return Compare(response->outputs(), expected, plan.tolerance());
}

}  // namespace

absl::Status RunCorpusEntryRemote(Client& client, const CorpusEntry& entry,
                                  const std::string& device, const v1::Optimization& optimization) {
  return entry.is_plan ? RunPlan(client, entry.plan, device, optimization)
                       : RunCase(client, entry.kase, device, optimization);
}

}  // namespace uopd
