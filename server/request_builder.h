// Turning the buffers and kernels of an Execute or Prepare request into core types: resolving
// handles (for this client only), creating inline buffers and views, decoding ASTs. Every error
// names the request entry it is about ("buffers[2]", "kernels[1]").
#ifndef UOPD_SERVER_REQUEST_BUILDER_H_
#define UOPD_SERVER_REQUEST_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/ir/limits.h"
#include "core/plan/execution_plan.h"
#include "core/session/resource_registry.h"
#include "core/wire/decode.h"
#include "core/wire/kernel_ast_memo.h"
#include "uopd/v1/kernel_service.pb.h"

namespace uopd {

struct BuiltBindings {
  std::vector<BufferView> buffers;
  std::vector<KernelBinding> kernels;
  std::vector<std::string> handles;  // the buffer handles the request names
};

struct RequestContext {
  const Identity& who;
  const std::string& default_device;  // "" means "CPU"
  const DeviceRegistry& devices;
  ResourceRegistry& resources;
  const IrLimits& limits;
  KernelAstMemo* asts = nullptr;  // null: every AST is decoded
};

// DecodeKernelAst through `memo` when there is one.
absl::StatusOr<std::shared_ptr<const KernelAst>> DecodeAst(KernelAstMemo* memo,
                                                           const v1::Graph& wire,
                                                           const IrLimits& limits);

absl::StatusOr<BuiltBindings> BuildBindings(
    const RequestContext& ctx, const google::protobuf::RepeatedPtrField<v1::BufferRef>& buffers,
    const google::protobuf::RepeatedPtrField<v1::KernelInvocation>& kernels);

// How a kernel is to be optimized: the request's `optimization`, or when it says DEFAULT, the
// AST's KernelInfo.opts_to_apply, or else the server's default. INVALID_ARGUMENT naming the
// opt ("optimization.opts[1]: unknown opt op 'UPCASTT'").
absl::StatusOr<OptimizeRequest> OptimizationOf(const v1::Optimization& wire,
                                               const v1::Graph& graph);

// `name`, or else `fallback`, or else "CPU": how requests default their device.
std::string DeviceOrDefault(const std::string& name, const std::string& fallback = "");

// A value dtype a buffer can hold (not VOID or INDEX): INVALID_ARGUMENT otherwise.
absl::StatusOr<Scalar> BufferDtype(int wire_dtype);
// size * itemsize, refusing negative sizes and overflow (INVALID_ARGUMENT).
absl::StatusOr<int64_t> BufferBytes(Scalar dtype, int64_t size);

}  // namespace uopd

#endif  // UOPD_SERVER_REQUEST_BUILDER_H_
