#include "core/cache/program_codec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "core/wire/decode.h"
#include "core/wire/encode.h"
#include "core/wire/opt_codec.h"
#include "google/protobuf/util/message_differencer.h"

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
    if (var.multiple > 1) v->set_multiple_of(var.multiple);
  }
  for (const std::string& name : spec.var_names) out.add_var_names(name);
  for (const BufferParam& param : spec.globals) {
    v1::BufferSlot* slot = out.add_globals();
    slot->set_slot(param.slot);
    slot->set_dtype(static_cast<v1::DType::Scalar>(param.dtype.scalar));
    slot->set_size(param.size);
    if (param.accessed) {
      slot->set_access_begin(param.accessed->begin);
      slot->set_access_end(param.accessed->end);
    }
  }
  for (int slot : spec.outs) out.add_outs(slot);
  for (int slot : spec.ins) out.add_ins(slot);
  out.set_buf_count(spec.buf_count);
  out.set_proven_accesses(spec.proven_accesses);
  out.set_guarded_accesses(spec.guarded_accesses);
  return out;
}

absl::StatusOr<ProgramSpec> DecodeProgramMetadata(const v1::ProgramMetadata& m) {
  if (m.global_size_size() != 3 || (m.local_size_size() != 0 && m.local_size_size() != 3)) {
    return absl::InternalError("launch dimensions must have 3 entries");
  }
  ProgramSpec spec;
  spec.name = m.name();
  spec.device = m.device();
  for (int i = 0; i < 3; ++i) {
    UOPD_ASSIGN_OR_RETURN(spec.global_size[i], DecodeDim(m.global_size(i)));
  }
  if (m.local_size_size() == 3) {
    spec.local_size.emplace();
    for (int i = 0; i < 3; ++i) {
      UOPD_ASSIGN_OR_RETURN((*spec.local_size)[i], DecodeDim(m.local_size(i)));
    }
  }
  for (const v1::VarBounds& v : m.vars()) {
    spec.vars.push_back({v.name(), v.min(), v.max(), std::max<int64_t>(1, v.multiple_of())});
  }
  spec.var_names.assign(m.var_names().begin(), m.var_names().end());
  for (const v1::BufferSlot& slot : m.globals()) {
    if (!ScalarFromNumber(slot.dtype()) || slot.slot() < 0 || slot.slot() >= m.buf_count()) {
      return absl::InternalError("malformed buffer slot");
    }
    BufferParam param{slot.slot(), DType::Of(static_cast<Scalar>(slot.dtype())), slot.size()};
    if (slot.has_access_begin() || slot.has_access_end()) {
      const ElementRange accessed{slot.access_begin(), slot.access_end()};
      if (accessed.begin < 0 || accessed.end > param.size || accessed.begin > accessed.end) {
        return absl::InternalError("malformed accessed range of a buffer slot");
      }
      param.accessed = accessed;
    }
    spec.globals.push_back(param);
  }
  spec.outs.assign(m.outs().begin(), m.outs().end());
  spec.ins.assign(m.ins().begin(), m.ins().end());
  spec.buf_count = m.buf_count();
  spec.proven_accesses = m.proven_accesses();
  spec.guarded_accesses = m.guarded_accesses();
  return spec;
}

bool SameProgramMetadata(const ProgramSpec& a, const ProgramSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(EncodeProgramMetadata(a),
                                                            EncodeProgramMetadata(b));
}

std::string SerializeCacheEntry(const CacheEntry& entry) {
  v1::CachedKernel out;
  out.set_key(entry.key);
  out.set_ast_hash(entry.ast_hash);
  if (!entry.is_search_record()) {
    out.set_binary(entry.kernel.bytes);
    out.set_entry(entry.kernel.entry);
    out.set_ptx(entry.kernel.ptx);
    *out.mutable_metadata() = EncodeProgramMetadata(entry.spec);
    out.set_source(entry.spec.src);
  } else {
    for (const Opt& opt : entry.tuned_opts) *out.add_tuned_opts() = EncodeOpt(opt);
    v1::SearchSummary& summary = *out.mutable_search();
    summary.set_seconds(entry.search.seconds);
    summary.set_heuristic_seconds(entry.search.heuristic_seconds);
    summary.set_candidates(entry.search.candidates);
    summary.set_budget_seconds(entry.search.budget_seconds);
    summary.set_converged(entry.search.converged);
  }
  return out.SerializeAsString();
}

absl::StatusOr<CacheEntry> ParseCacheEntry(absl::string_view bytes) {
  v1::CachedKernel wire;
  if (!wire.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InternalError("cache entry: not a serialized uopd.v1.CachedKernel");
  }
  CacheEntry entry;
  entry.key = wire.key();
  entry.ast_hash = wire.ast_hash();
  if (wire.binary().empty()) {  // a search's record
    absl::StatusOr<std::vector<Opt>> opts = DecodeOpts(wire.tuned_opts(), "tuned_opts");
    if (!opts.ok())
      return absl::InternalError(absl::StrCat("cache entry: ", opts.status().message()));
    entry.tuned_opts = *std::move(opts);
    const v1::SearchSummary& summary = wire.search();
    entry.search =
        SearchSummary{summary.seconds(), summary.heuristic_seconds(), summary.candidates(),
                      summary.budget_seconds(), summary.converged()};
    return entry;
  }
  absl::StatusOr<ProgramSpec> spec = DecodeProgramMetadata(wire.metadata());
  if (!spec.ok())
    return absl::InternalError(absl::StrCat("cache entry: ", spec.status().message()));
  entry.spec = *std::move(spec);
  entry.spec.src = wire.source();
  entry.kernel = CompiledKernel{wire.binary(), wire.entry(), wire.ptx()};
  return entry;
}

}  // namespace uopd
