#include "core/cache/program_codec.h"

#include "absl/strings/str_cat.h"
#include "core/ir/decode.h"
#include "core/ir/encode.h"

namespace uopd {
namespace {

void EncodeDim(const SymbolicDim& dim, v1::LaunchDim* out) {
  out->set_constant(dim.constant);
  if (dim.expr != nullptr) *out->mutable_expr() = EncodeGraph(dim.expr);
}

absl::StatusOr<SymbolicDim> DecodeDim(const v1::LaunchDim& wire) {
  SymbolicDim dim;
  dim.constant = wire.constant();
  if (wire.expr().nodes_size() == 0) return dim;
  auto graph = std::make_shared<Graph>();
  auto expr = DecodeExpression(wire.expr(), *graph);
  if (!expr.ok())
    return absl::InternalError(absl::StrCat("launch dimension: ", expr.status().message()));
  dim.expr = *expr;
  dim.owner = std::move(graph);
  return dim;
}

}  // namespace

v1::ProgramMetadata EncodeProgramMetadata(const ProgramSpec& spec) {
  v1::ProgramMetadata out;
  out.set_name(spec.name);
  out.set_device(spec.device);
  for (const SymbolicDim& dim : spec.global_size) EncodeDim(dim, out.add_global_size());
  if (spec.local_size) {
    for (const SymbolicDim& dim : *spec.local_size) EncodeDim(dim, out.add_local_size());
  }
  for (const VarInfo& var : spec.vars) {
    v1::VarBounds* v = out.add_vars();
    v->set_name(var.name);
    v->set_min(var.min);
    v->set_max(var.max);
  }
  for (const std::string& name : spec.var_names) out.add_var_names(name);
  for (const BufferParam& param : spec.globals) {
    v1::BufferSlot* slot = out.add_globals();
    slot->set_slot(param.slot);
    slot->set_dtype(static_cast<v1::DType::Scalar>(param.dtype.scalar));
    slot->set_size(param.size);
  }
  for (int slot : spec.outs) out.add_outs(slot);
  for (int slot : spec.ins) out.add_ins(slot);
  out.set_buf_count(spec.buf_count);
  out.set_proven_accesses(spec.proven_accesses);
  out.set_guarded_accesses(spec.guarded_accesses);
  return out;
}

v1::CachedKernel EncodeCachedKernel(const ProgramSpec& spec, const CompiledKernel& kernel) {
  v1::CachedKernel out;
  out.set_binary(kernel.bytes);
  out.set_entry(kernel.entry);
  out.set_ptx(kernel.ptx);
  *out.mutable_metadata() = EncodeProgramMetadata(spec);
  out.set_source(spec.src);
  return out;
}

absl::StatusOr<DecodedKernel> DecodeCachedKernel(const v1::CachedKernel& cached) {
  const v1::ProgramMetadata& m = cached.metadata();
  if (m.global_size_size() != 3 || (m.local_size_size() != 0 && m.local_size_size() != 3)) {
    return absl::InternalError("cache entry: launch dimensions must have 3 entries");
  }
  DecodedKernel out;
  ProgramSpec& spec = out.spec;
  spec.name = m.name();
  spec.device = m.device();
  spec.src = cached.source();
  for (int i = 0; i < 3; ++i) {
    auto dim = DecodeDim(m.global_size(i));
    if (!dim.ok()) return dim.status();
    spec.global_size[i] = *std::move(dim);
  }
  if (m.local_size_size() == 3) {
    spec.local_size.emplace();
    for (int i = 0; i < 3; ++i) {
      auto dim = DecodeDim(m.local_size(i));
      if (!dim.ok()) return dim.status();
      (*spec.local_size)[i] = *std::move(dim);
    }
  }
  for (const v1::VarBounds& v : m.vars()) spec.vars.push_back({v.name(), v.min(), v.max()});
  spec.var_names.assign(m.var_names().begin(), m.var_names().end());
  for (const v1::BufferSlot& slot : m.globals()) {
    if (slot.dtype() < 1 || slot.dtype() > kMaxScalar || slot.slot() < 0 ||
        slot.slot() >= m.buf_count()) {
      return absl::InternalError("cache entry: malformed buffer slot");
    }
    spec.globals.push_back(
        {slot.slot(), DType::Of(static_cast<Scalar>(slot.dtype())), slot.size()});
  }
  spec.outs.assign(m.outs().begin(), m.outs().end());
  spec.ins.assign(m.ins().begin(), m.ins().end());
  spec.buf_count = m.buf_count();
  spec.proven_accesses = m.proven_accesses();
  spec.guarded_accesses = m.guarded_accesses();
  out.kernel.bytes = cached.binary();
  out.kernel.entry = cached.entry();
  out.kernel.ptx = cached.ptx();
  return out;
}

}  // namespace uopd
