#include "client/remote_corpus.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/corpus/compare.h"
#include "core/ir/dtype.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// A request carries at most the server's 4 MiB: buffers past this go ahead of it, streamed into
// buffers of their own (a model's kernels take tens of MiB).
constexpr int64_t kMaxInlineBytes = 1 << 20;

// The buffers a request names: inline when small, otherwise made and written first and freed
// when this goes.
class StagedBuffers {
 public:
  StagedBuffers(Client& client, std::string device) : client_(client), device_(std::move(device)) {}
  ~StagedBuffers() {
    for (const std::string& handle : handles_) client_.FreeBuffer(handle).IgnoreError();
  }
  StagedBuffers(const StagedBuffers&) = delete;
  StagedBuffers& operator=(const StagedBuffers&) = delete;

  absl::StatusOr<v1::BufferRef> Ref(const v1::CorpusBuffer& buffer) {
    v1::BufferRef ref;
    const int64_t bytes = buffer.size() * ScalarItemSize(static_cast<Scalar>(buffer.dtype()));
    if (std::max<int64_t>(bytes, static_cast<int64_t>(buffer.init().size())) <= kMaxInlineBytes) {
      ref.mutable_inline_()->set_dtype(buffer.dtype());
      ref.mutable_inline_()->set_size(buffer.size());
      ref.mutable_inline_()->set_data(buffer.init());
      return ref;
    }
    UOPD_ASSIGN_OR_RETURN(std::string handle,
                          client_.CreateBuffer(device_, buffer.dtype(), buffer.size()));
    handles_.push_back(handle);
    if (!buffer.init().empty()) UOPD_RETURN_IF_ERROR(client_.WriteBuffer(handle, buffer.init()));
    ref.set_handle(handle);
    return ref;
  }

 private:
  Client& client_;
  std::string device_;
  std::vector<std::string> handles_;
};

// An output's bytes: returned with the response when inline, read back when it is a buffer of
// its own (the response has the same bound as the request).
absl::StatusOr<std::string> OutputBytes(
    Client& client, const v1::BufferRef& ref, int index,
    const google::protobuf::RepeatedPtrField<v1::BufferData>& returned) {
  if (ref.has_handle()) return client.ReadBuffer(ref.handle());
  for (const v1::BufferData& output : returned) {
    if (output.buffer() == index) return output.data();
  }
  return absl::InternalError(absl::StrCat("the response has no bytes for buffer ", index));
}

// What an output should hold, by request buffer index.
struct Expected {
  Scalar dtype;
  std::string bytes;
  std::string label;  // "slot 2" or "buffer 7", for messages
};

absl::Status Compare(Client& client, const google::protobuf::RepeatedPtrField<v1::BufferRef>& refs,
                     const google::protobuf::RepeatedPtrField<v1::BufferData>& returned,
                     const absl::flat_hash_map<int, Expected>& expected,
                     const v1::CorpusTolerance& tolerance) {
  for (const auto& [index, want] : expected) {
    UOPD_ASSIGN_OR_RETURN(std::string got, OutputBytes(client, refs[index], index, returned));
    auto diff =
        CompareBuffers(want.dtype, got, want.bytes, Tolerance{tolerance.rtol(), tolerance.atol()});
    if (diff) return absl::FailedPreconditionError(absl::StrCat(want.label, ": ", *diff));
  }
  return absl::OkStatus();
}

// The kernels' device time of one run, from the daemon's timings.
double KernelSeconds(const google::protobuf::RepeatedPtrField<v1::KernelTiming>& timings) {
  int64_t ns = 0;
  for (const v1::KernelTiming& t : timings) ns += t.end_ns() - t.start_ns();
  return static_cast<double>(ns) * 1e-9;
}

absl::StatusOr<double> RunCase(Client& client, const v1::CorpusCase& kase,
                               const std::string& device, const v1::Optimization& optimization) {
  v1::ExecuteRequest request;
  request.set_device(device);
  v1::KernelInvocation* kernel = request.add_kernels();
  *kernel->mutable_ast() = kase.ast();
  *kernel->mutable_optimization() = optimization;
  StagedBuffers staged(client, device);
  absl::flat_hash_map<int64_t, int> by_slot;
  absl::flat_hash_map<int, Expected> expected;
  for (const v1::CorpusBuffer& buffer : kase.buffers()) {
    by_slot[buffer.slot()] = request.buffers_size();
    UOPD_ASSIGN_OR_RETURN(*request.add_buffers(), staged.Ref(buffer));
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
    if (!request.buffers(it->second).has_handle() && !expected.contains(it->second))
      request.add_return_buffers(it->second);  // once each: the server refuses repeats
    expected[it->second] = {static_cast<Scalar>(kase.buffers(it->second).dtype()),
                            output.expected(), absl::StrCat("slot ", output.slot())};
  }
  request.mutable_vars()->insert(kase.vars().begin(), kase.vars().end());
  UOPD_ASSIGN_OR_RETURN(v1::ExecuteResponse response, client.Execute(request));
  UOPD_RETURN_IF_ERROR(
      Compare(client, request.buffers(), response.outputs(), expected, kase.tolerance()));
  return KernelSeconds(response.timings());
}

absl::StatusOr<double> RunPlan(Client& client, const v1::CorpusPlan& plan,
                               const std::string& device, const v1::Optimization& optimization) {
  v1::PrepareRequest prepare;
  prepare.set_device(device);
  StagedBuffers staged(client, device);
  absl::flat_hash_map<int64_t, int> by_id;
  for (const v1::CorpusBuffer& buffer : plan.buffers()) {
    by_id[buffer.id()] = prepare.buffers_size();
    UOPD_ASSIGN_OR_RETURN(*prepare.add_buffers(), staged.Ref(buffer));
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
    if (!prepare.buffers(it->second).has_handle() && !expected.contains(it->second))
      run.add_return_buffers(it->second);  // once each: the server refuses repeats
    expected[it->second] = {static_cast<Scalar>(plan.buffers(it->second).dtype()),
                            output.expected(), absl::StrCat("buffer ", output.id())};
  }
  auto response = client.RunPlan(run);
  absl::Status released = client.ReleasePlan(prepared.plan_id());
  if (!response.ok()) return response.status();
  UOPD_RETURN_IF_ERROR(released);
  UOPD_RETURN_IF_ERROR(
      Compare(client, prepare.buffers(), response->outputs(), expected, plan.tolerance()));
  return KernelSeconds(response->timings());
}

}  // namespace

absl::StatusOr<double> RunCorpusEntryRemote(Client& client, const CorpusEntry& entry,
                                            const std::string& device,
                                            const v1::Optimization& optimization) {
  return entry.is_plan ? RunPlan(client, entry.plan, device, optimization)
                       : RunCase(client, entry.kase, device, optimization);
}

}  // namespace uopd
