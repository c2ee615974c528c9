#include "server/request_builder.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "core/wire/decode.h"
#include "core/wire/opt_codec.h"

namespace uopd {

std::string DeviceOrDefault(const std::string& name, const std::string& fallback) {
  if (!name.empty()) return name;
  return fallback.empty() ? "CPU" : fallback;
}

absl::StatusOr<Scalar> BufferDtype(int wire_dtype) {
  const std::optional<Scalar> known = ScalarFromNumber(wire_dtype);
  if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown dtype ", wire_dtype));
  const Scalar dtype = *known;
  if (dtype == Scalar::kVoid || dtype == Scalar::kIndex) {
    return absl::InvalidArgumentError(absl::StrCat("a buffer cannot hold ", ScalarName(dtype)));
  }
  return dtype;
}

absl::StatusOr<int64_t> BufferBytes(Scalar dtype, int64_t size) {
  if (size < 0) return absl::InvalidArgumentError(absl::StrCat("negative size ", size));
  int64_t item = ScalarItemSize(dtype);
  if (size > (int64_t{1} << 56) / item) {
    return absl::InvalidArgumentError(absl::StrCat("size ", size, " is too large"));
  }
  return size * item;
}

absl::StatusOr<OptimizeRequest> OptimizationOf(const v1::Optimization& wire,
                                               const v1::Graph& graph) {
  OptimizeRequest request;
  request.render.allow_fma = wire.allow_fma();
  switch (wire.mode()) {
    case v1::Optimization::HEURISTIC:
      request.mode = OptMode::kHeuristic;
      break;
    case v1::Optimization::NONE:
      request.mode = OptMode::kNone;
      break;
    case v1::Optimization::SEARCH:
      request.mode = OptMode::kSearch;
      break;
    case v1::Optimization::OPTS: {
      request.mode = OptMode::kOpts;
      UOPD_ASSIGN_OR_RETURN(request.opts, DecodeOpts(wire.opts(), "optimization.opts"));
      break;
    }
    default: {
      // tinygrad's KernelInfo(opts_to_apply=...) on the SINK.
      if (graph.nodes_size() > 0) {
        const v1::Arg& arg = graph.nodes(graph.nodes_size() - 1).arg();
        if (arg.has_kernel() && arg.kernel().has_opts_to_apply()) {
          request.mode = OptMode::kOpts;
          UOPD_ASSIGN_OR_RETURN(request.opts,
                                DecodeOpts(arg.kernel().opts_to_apply().opts(), "opts_to_apply"));
        }
      }
      if (!wire.opts().empty()) {
        return absl::InvalidArgumentError("optimization.opts needs mode OPTS");
      }
      break;
    }
  }
  return request;
}

namespace {

absl::StatusOr<BufferView> BuildInline(const RequestContext& ctx, const v1::InlineBuffer& wire) {
  UOPD_ASSIGN_OR_RETURN(Scalar dtype, BufferDtype(wire.dtype()));
  UOPD_ASSIGN_OR_RETURN(int64_t bytes, BufferBytes(dtype, wire.size()));
  if (!wire.data().empty() && static_cast<int64_t>(wire.data().size()) != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("data has ", wire.data().size(), " bytes, size * itemsize is ", bytes));
  }
  UOPD_ASSIGN_OR_RETURN(Device * device,
                        ctx.devices.Get(DeviceOrDefault(wire.device(), ctx.default_device)));
  // Charged to the caller until the memory is freed: summed with the request's other inline
  // buffers, and held for as long as a plan keeps it.
  UOPD_ASSIGN_OR_RETURN(auto storage, ctx.resources.Allocate(ctx.who, *device, bytes));
  UOPD_ASSIGN_OR_RETURN(BufferView view, BufferView::Whole(std::move(storage), dtype));
  if (!wire.data().empty()) UOPD_RETURN_IF_ERROR(view.CopyIn(0, wire.data().data(), bytes));
  return view;
}

}  // namespace

absl::StatusOr<BuiltBindings> BuildBindings(
    const RequestContext& ctx, const google::protobuf::RepeatedPtrField<v1::BufferRef>& buffers,
    const google::protobuf::RepeatedPtrField<v1::KernelInvocation>& kernels) {
  BuiltBindings built;
  for (int i = 0; i < buffers.size(); ++i) {
    const v1::BufferRef& ref = buffers[i];
    absl::StatusOr<BufferView> view;
    switch (ref.ref_case()) {
      case v1::BufferRef::kHandle:
        view = ctx.resources.GetBuffer(ctx.who, ref.handle());
        built.handles.push_back(ref.handle());
        break;
      case v1::BufferRef::kInline:
        view = BuildInline(ctx, ref.inline_());
        break;
      case v1::BufferRef::kView: {
        const v1::ViewRef& v = ref.view();
        if (v.base() < 0 || v.base() >= i) {
          view = absl::InvalidArgumentError(
              absl::StrCat("view base ", v.base(), " is not an earlier buffer"));
          break;
        }
        auto dtype = BufferDtype(v.dtype());
        if (!dtype.ok() || v.offset() < 0) {
          view = dtype.ok() ? absl::InvalidArgumentError("negative view offset") : dtype.status();
          break;
        }
        view = BufferView::Of(built.buffers[v.base()], static_cast<size_t>(v.offset()), *dtype,
                              v.size());
        break;
      }
      default:
        view = absl::InvalidArgumentError("names no handle, inline buffer or view");
    }
    if (!view.ok()) return WithContext(view.status(), absl::StrCat("buffers[", i, "]"));
    built.buffers.push_back(*std::move(view));
  }
  for (int k = 0; k < kernels.size(); ++k) {
    const v1::KernelInvocation& wire = kernels[k];
    KernelBinding binding;
    auto ast = DecodeAst(ctx.asts, wire.ast(), ctx.limits);
    if (!ast.ok()) return WithContext(ast.status(), absl::StrCat("kernels[", k, "]"));
    binding.ast = *std::move(ast);
    const std::string label = absl::StrCat("kernels[", k, "] (", binding.ast->Label(), ")");
    auto device = ctx.devices.Get(DeviceOrDefault(wire.device(), ctx.default_device));
    if (!device.ok()) return WithContext(device.status(), label);
    binding.device = *device;
    binding.buffers.assign(wire.buffers().begin(), wire.buffers().end());
    binding.fixedvars.insert(wire.fixedvars().begin(), wire.fixedvars().end());
    auto optimization = OptimizationOf(wire.optimization(), wire.ast());
    if (!optimization.ok()) {
      return WithContext(optimization.status(), label);
    }
    binding.optimization = *std::move(optimization);
    built.kernels.push_back(std::move(binding));
  }
  return built;
}

absl::StatusOr<std::shared_ptr<const KernelAst>> DecodeAst(KernelAstMemo* memo,
                                                           const v1::Graph& wire,
                                                           const IrLimits& limits) {
  return memo != nullptr ? memo->Decode(wire, limits) : DecodeKernelAst(wire, limits);
}

}  // namespace uopd
