#include "core/wire/tinygrad_0_14.h"

#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/ir/value_range.h"
#include "core/util/status_macros.h"
#include "core/wire/encode.h"

namespace uopd {
namespace {

using Scalar = v1::DType::Scalar;
using NodeOp = v1::Node::Op;

bool IsWeak(Scalar s) { return s == v1::DType::WEAKINT || s == v1::DType::WEAKFLOAT; }

bool IsFloat(Scalar s) {
  switch (s) {
    case v1::DType::FLOAT16:
    case v1::DType::BFLOAT16:
    case v1::DType::FLOAT32:
    case v1::DType::FLOAT64:
    case v1::DType::FP8E4M3:
    case v1::DType::FP8E5M2:
    case v1::DType::FP8E4M3FNUZ:
    case v1::DType::FP8E5M2FNUZ:
    case v1::DType::WEAKFLOAT:
      return true;
    default:
      return false;
  }
}

bool IsUnsigned(Scalar s) {
  return s == v1::DType::UINT8 || s == v1::DType::UINT16 || s == v1::DType::UINT32 ||
         s == v1::DType::UINT64;
}

// The type a weak type commits to where no consumer decides (tinygrad: index arithmetic is
// INDEX, a float literal is the default float).
Scalar Committed(Scalar s) {
  if (s == v1::DType::WEAKINT) return v1::DType::INDEX;
  if (s == v1::DType::WEAKFLOAT) return v1::DType::FLOAT32;
  return s;
}

// Which spelling of an INDEX a consumer needs.
constexpr int kValue = 0;
constexpr int kTarget = 1;

class Translator {
 public:
  Translator(const v1::Graph& in, int64_t max_nodes)
      : in_(in), n_(in.nodes_size()), max_nodes_(max_nodes) {}

  absl::StatusOr<v1::Graph> Run() {
    if (n_ == 0) return absl::InvalidArgumentError("the graph has no nodes");
    for (int i = 0; i < n_; ++i) UOPD_RETURN_IF_ERROR(Check(i));
    // Which spellings of each node its consumers need, from the root down.
    demanded_.assign(n_, {});
    demanded_[n_ - 1].insert(0);
    for (int i = n_ - 1; i >= 0; --i) {
      if (demanded_[i].empty()) continue;
      for (auto [src, variant] : Edges(i)) {
        demanded_[src].insert(variant);
        // A weak value another type is wanted of is a CAST of it as committed.
        if (IsWeakValue(src)) demanded_[src].insert(Committed(scalar(src)));
      }
    }
    emitted_.assign(n_, {});
    for (int i = 0; i < n_; ++i) {
      for (int variant : demanded_[i]) {
        if (emitted_[i].contains(variant)) continue;  // a CAST's base, made first
        absl::StatusOr<int> at = Emit(i, variant);
        if (!at.ok()) return at.status();
        emitted_[i][variant] = *at;
      }
      // Checked as it grows (a FLOORDIV becomes about 12 nodes): 100,000 of them took 240 MB
      // before the decoder's limit refused the result (a review helper's finding).
      if (out_.nodes_size() > max_nodes_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node ", i, ": the graph's translation from the tinygrad 0.14 dialect has ",
            out_.nodes_size(), " nodes here, over the limit of ", max_nodes_));
      }
    }
    out_.set_dialect(v1::TINYGRAD_0_12);
    return std::move(out_);
  }

 private:
  const v1::Node& node(int i) const { return in_.nodes(i); }
  Scalar scalar(int i) const { return node(i).dtype().scalar(); }

  absl::Status Error(int i, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "nodes[", i, "] (", v1::Node::Op_Name(node(i).op()), ", tinygrad 0.14): ", what));
  }

  absl::Status Check(int i) const {
    const v1::Node& n = node(i);
    for (int s : n.src()) {
      if (s < 0 || s >= i) {
        return Error(i, absl::StrCat("source ", s, " is not an earlier node"));
      }
    }
    switch (n.op()) {
      case v1::Node::DEFINE_GLOBAL:
      case v1::Node::DEFINE_VAR:
        return Error(i, "is 0.12's spelling: 0.14 names buffers and variables with PARAM");
      case v1::Node::IDIV:
      case v1::Node::MOD:
        return Error(i, "is 0.12's spelling: 0.14 writes CDIV/CMOD or FLOORDIV/FLOORMOD");
      case v1::Node::VECTORIZE:
      case v1::Node::VCONST:
        return Error(i, "is 0.12's spelling: 0.14 writes STACK");
      default:
        break;
    }
    if (IsDeviceRange(i)) {
      // The multi-device axis (Tensor.shard): bound per device at launch as the variable
      // _device_num, as tinygrad's codegen lowers it (pm_device_to_var); its end is the number
      // of devices.
      if (n.src_size() != 1 || node(n.src(0)).op() != v1::Node::CONST ||
          node(n.src(0)).arg().value_case() != v1::Arg::kI64 || node(n.src(0)).arg().i64() < 1) {
        return Error(i, "a DEVICE range ends at a constant number of devices (1 or more)");
      }
    }
    if (n.op() == v1::Node::PARAM && !n.arg().has_param()) return Error(i, "has no ParamArg");
    return absl::OkStatus();
  }

  bool IsDeviceRange(int i) const {
    return node(i).op() == v1::Node::RANGE && node(i).arg().range().type() == v1::RangeArg::DEVICE;
  }

  // A CONST whose type its consumer decides: a weak literal, or Invalid.
  bool IsLiteral(int i) const {
    return node(i).op() == v1::Node::CONST && (IsWeak(scalar(i)) || node(i).arg().invalid());
  }
  bool IsVariable(int i) const {
    const v1::Node& n = node(i);
    return n.op() == v1::Node::PARAM && (n.arg().param().is_value() || n.arg().param().slot() < 0);
  }
  Scalar Default(int literal) const {
    return node(literal).arg().invalid() ? v1::DType::INDEX : Committed(scalar(literal));
  }

  // The type of the literal at `pos` of `consumer`, as tinygrad commits it there.
  Scalar ContextScalar(int consumer, int pos) const {
    const v1::Node& c = node(consumer);
    const int literal = c.src(pos);
    const Scalar own = Committed(c.dtype().scalar());
    switch (c.op()) {
      case v1::Node::CMPLT:
      case v1::Node::CMPNE:
      case v1::Node::CMPEQ: {
        if (c.src_size() != 2) return Default(literal);  // the IR's arity check names it
        const int other = c.src(1 - pos);
        return IsLiteral(other) ? Default(literal) : Committed(scalar(other));
      }
      case v1::Node::WHERE:
        return pos == 0 ? v1::DType::BOOL : own;
      case v1::Node::STORE:
        return Committed(scalar(c.src(0)));
      case v1::Node::INDEX:
        return pos == 2 ? v1::DType::BOOL : v1::DType::INDEX;
      case v1::Node::RANGE:
        return v1::DType::INDEX;
      case v1::Node::CAST:
      case v1::Node::BITCAST:
      case v1::Node::END:
      case v1::Node::SINK:
      case v1::Node::AFTER:
      case v1::Node::GROUP:
        return Default(literal);
      case v1::Node::REDUCE:
        return pos == 0 ? own : Default(literal);
      default:  // arithmetic: the operation's own type
        return own;
    }
  }

  // A value of a weak type that is not a literal (index arithmetic, a RANGE): tinygrad converts
  // it where a consumer wants another type (a RANGE stored into an int32 buffer).
  bool IsWeakValue(int i) const {
    return IsWeak(scalar(i)) && !IsLiteral(i) && node(i).op() != v1::Node::INDEX;
  }

  // STORE(INDEX(buf, idx), WHERE(c, v, Invalid)): 0.14 gates a store by its value; 0.12 (and
  // the IR) by its index: STORE(INDEX(buf, WHERE(c, idx, Invalid)), v). So is a store of
  // REDUCE(op, WHERE(c, v, Invalid), ranges) where c does not depend on the ranges: tinygrad
  // lifts the mask out of the reduction, and the elements where c is false are Invalid, not
  // stored. The nodes (and the variants of the condition and the value), or false.
  struct GatedStore {
    int target, buffer, index, cond, cond_variant, value, value_variant;
  };
  bool AsGatedStore(int i, GatedStore* g) const {
    const v1::Node& n = node(i);
    if (n.op() != v1::Node::STORE || n.src_size() != 2) return false;
    const int t = n.src(0), w = n.src(1);
    if (node(t).op() != v1::Node::INDEX || node(t).src_size() != 2) return false;
    if (const int masked = MaskedReduceWhere(w); masked >= 0 && MaskIsOutsideReduce(w)) {
      *g = {
          t, node(t).src(0),       node(t).src(1), node(masked).src(0), VariantOfSource(masked, 0),
          w, VariantOfSource(i, 1)};
      return true;
    }
    if (node(w).op() != v1::Node::WHERE || node(w).src_size() != 3) return false;
    const int invalid = node(w).src(2);
    if (node(invalid).op() != v1::Node::CONST || !node(invalid).arg().invalid()) return false;
    *g = {t,
          node(t).src(0),
          node(t).src(1),
          node(w).src(0),
          VariantOfSource(w, 0),
          node(w).src(1),
          VariantOfSource(w, 1)};
    return true;
  }

  // Whether masked REDUCE `i`'s condition depends on none of its ranges. Answered once per
  // REDUCE and once per (condition, ranges); the searches of a whole graph scan at most
  // kMaskSearchEdges sources together (past that a condition is taken as dependent: the
  // identity reduced), so many REDUCEs of one large mask cost no more than one.
  bool MaskIsOutsideReduce(int i) const {
    static constexpr int64_t kMaskSearchEdges = int64_t{1} << 20;
    if (auto known = mask_outside_reduce_.find(i); known != mask_outside_reduce_.end()) {
      return known->second;
    }
    // By axis, not by node: a client may spell one range twice.
    std::set<std::vector<int64_t>> axes;
    for (int pos = 1; pos < node(i).src_size(); ++pos) {
      const v1::Node& r = node(node(i).src(pos));
      axes.emplace(r.arg().range().axis().begin(), r.arg().range().axis().end());
    }
    const int cond = node(MaskedReduceWhere(i)).src(0);
    auto key = std::make_pair(cond, axes);
    if (auto known = mask_outside_ranges_.find(key); known != mask_outside_ranges_.end()) {
      return mask_outside_reduce_[i] = known->second;
    }
    auto is_reduce_range = [&](const v1::Node& n) {
      return n.op() == v1::Node::RANGE &&
             axes.contains({n.arg().range().axis().begin(), n.arg().range().axis().end()});
    };
    std::vector<int> stack = {cond};
    std::set<int> seen = {cond};
    bool outside = true;
    while (!stack.empty() && outside) {
      const int at = stack.back();
      stack.pop_back();
      mask_search_edges_ += node(at).src_size() + 1;
      if (is_reduce_range(node(at)) || mask_search_edges_ > kMaskSearchEdges) outside = false;
      for (int s : node(at).src()) {
        if (seen.insert(s).second) stack.push_back(s);
      }
    }
    mask_outside_ranges_[std::move(key)] = outside;
    return mask_outside_reduce_[i] = outside;
  }

  // REDUCE(op, WHERE(c, v, Invalid), ranges...): 0.14 leaves the elements where c is false out
  // of the reduction; the IR reduces the operation's identity there instead. The WHERE, or -1.
  int MaskedReduceWhere(int i) const {
    const v1::Node& n = node(i);
    if (n.op() != v1::Node::REDUCE || n.src_size() < 1) return -1;
    const int w = n.src(0);
    if (node(w).op() != v1::Node::WHERE || node(w).src_size() != 3) return -1;
    const v1::Node& invalid = node(node(w).src(2));
    return invalid.op() == v1::Node::CONST && invalid.arg().invalid() ? w : -1;
  }

  // The (source, variant) pairs node `i` is made of.
  std::vector<std::pair<int, int>> Edges(int i) const {
    std::vector<std::pair<int, int>> edges;
    if (node(i).op() == v1::Node::PARAM) return edges;  // its shape is metadata
    if (GatedStore g; AsGatedStore(i, &g)) {
      return {{g.buffer, VariantOfSource(g.target, 0)},
              {g.index, VariantOfSource(g.target, 1)},
              {g.cond, g.cond_variant},
              {g.value, g.value_variant}};
    }
    if (const int w = MaskedReduceWhere(i); w >= 0) {
      edges = {{node(w).src(0), VariantOfSource(w, 0)}, {node(w).src(1), VariantOfSource(w, 1)}};
      for (int pos = 1; pos < node(i).src_size(); ++pos) {
        edges.emplace_back(node(i).src(pos), VariantOfSource(i, pos));
      }
      return edges;
    }
    for (int pos = 0; pos < node(i).src_size(); ++pos) {
      edges.emplace_back(node(i).src(pos), VariantOfSource(i, pos));
    }
    return edges;
  }

  int VariantOfSource(int consumer, int pos) const {
    const int s = node(consumer).src(pos);
    if (IsLiteral(s) || IsWeakValue(s)) return ContextScalar(consumer, pos);
    if (node(s).op() == v1::Node::INDEX) {
      return node(consumer).op() == v1::Node::STORE && pos == 0 ? kTarget : kValue;
    }
    return 0;
  }

  int Source(int consumer, int pos) const {
    return emitted_[node(consumer).src(pos)].at(VariantOfSource(consumer, pos));
  }
  int Emitted(int src, int variant) const { return emitted_[src].at(variant); }

  int Add(v1::Node n) {
    *out_.add_nodes() = std::move(n);
    return out_.nodes_size() - 1;
  }

  // The buffer PARAM an INDEX or AFTER addresses (through AFTERs), or -1.
  int BufferOf(int i) const {
    while (node(i).op() == v1::Node::AFTER && node(i).src_size() > 0) i = node(i).src(0);
    return node(i).op() == v1::Node::PARAM && !IsVariable(i) ? i : -1;
  }

  absl::StatusOr<v1::DType> BufferDType(int param) const {
    const v1::Node& p = node(param);
    if (p.src_size() != 1) return Error(param, "a buffer needs one shape source");
    const v1::Node& shape = node(p.src(0));
    int64_t size = 1;
    auto times = [&](const v1::Node& dim) -> absl::Status {
      if (dim.op() != v1::Node::CONST || dim.arg().value_case() != v1::Arg::kI64 ||
          dim.arg().i64() < 0) {
        return Error(param, "a buffer's shape must be CONST sizes (symbolic sizes: not yet)");
      }
      if (dim.arg().i64() != 0 && size > (int64_t{1} << 40) / dim.arg().i64()) {
        return Error(param, "the buffer's size overflows");
      }
      size *= dim.arg().i64();
      return absl::OkStatus();
    };
    if (shape.op() == v1::Node::STACK) {
      for (int d : shape.src()) UOPD_RETURN_IF_ERROR(times(node(d)));
    } else {
      UOPD_RETURN_IF_ERROR(times(shape));
    }
    v1::DType dtype;
    dtype.set_scalar(Committed(p.dtype().scalar()));
    if (p.dtype().count() > 1) dtype.set_count(p.dtype().count());
    dtype.set_ptr(true);
    dtype.set_size(size);
    dtype.set_addrspace(p.arg().param().addrspace());
    return dtype;
  }

  v1::Node Like(int i) const {
    v1::Node n;
    n.set_op(node(i).op());
    *n.mutable_dtype() = node(i).dtype();
    n.mutable_dtype()->set_scalar(Committed(scalar(i)));
    *n.mutable_arg() = node(i).arg();
    for (int pos = 0; pos < node(i).src_size(); ++pos) n.add_src(Source(i, pos));
    return n;
  }

  // Like(i), without the DEVICE ranges among its sources after the first: that range is a
  // variable here, which nothing ends or waits for.
  v1::Node WithoutDeviceRanges(int i) const {
    v1::Node n = Like(i);
    n.clear_src();
    for (int pos = 0; pos < node(i).src_size(); ++pos) {
      if (pos == 0 || !IsDeviceRange(node(i).src(pos))) n.add_src(Source(i, pos));
    }
    return n;
  }

  v1::Node Make(NodeOp op, Scalar s, std::vector<int> src) const {
    v1::Node n;
    n.set_op(op);
    n.mutable_dtype()->set_scalar(s);
    for (int x : src) n.add_src(x);
    return n;
  }

  int IntConst(Scalar s, int64_t v) {
    v1::Node n = Make(v1::Node::CONST, s, {});
    n.mutable_arg()->set_i64(v);
    return Add(std::move(n));
  }

  absl::StatusOr<int> Literal(int i, Scalar s) {
    const v1::Arg& arg = node(i).arg();
    v1::Node n = Make(v1::Node::CONST, s, {});
    if (node(i).dtype().count() > 1) n.mutable_dtype()->set_count(node(i).dtype().count());
    if (arg.invalid()) {
      n.mutable_arg()->set_invalid(true);
    } else if (s == v1::DType::BOOL) {
      n.mutable_arg()->set_b(arg.value_case() == v1::Arg::kF64 ? arg.f64() != 0
                                                               : arg.i64() != 0 || arg.b());
    } else if (IsFloat(s)) {
      n.mutable_arg()->set_f64(arg.value_case() == v1::Arg::kF64 ? arg.f64()
                                                                 : static_cast<double>(arg.i64()));
    } else if (arg.value_case() == v1::Arg::kF64) {
      const double v = arg.f64();
      // Converting a double outside int64's range (or NaN) is undefined: the bounds first.
      const bool integral = v >= -0x1p63 && v < 0x1p63 && v == std::trunc(v);
      if (!integral) {
        return Error(i, absl::StrCat("float literal ", v, " used as ", v1::DType::Scalar_Name(s)));
      }
      n.mutable_arg()->set_i64(static_cast<int64_t>(v));
    } else {
      *n.mutable_arg() = arg;
    }
    return Add(std::move(n));
  }

  // The identity of REDUCE `i`'s operation in its type: what a left-out element contributes.
  absl::StatusOr<int> ReduceIdentity(int i) {
    const NodeOp op = node(i).arg().op();
    if (op != v1::Node::ADD && op != v1::Node::MUL && op != v1::Node::MAX) {
      return Error(i, "a masked reduction needs ADD, MUL or MAX");
    }
    const Scalar t = Committed(scalar(i));
    v1::Node c = Make(v1::Node::CONST, t, {});
    c.mutable_dtype()->set_count(node(i).dtype().count());
    // The wire's op and scalar numbers are the IR's.
    EncodeArg(ReduceIdentityArg(static_cast<Op>(op), static_cast<uopd::Scalar>(t)), &c);
    return Add(std::move(c));
  }

  // a // b and a % b rounded to negative infinity, from C's truncating ones: where the
  // remainder is nonzero and its sign differs from the divisor's, the quotient is one less
  // and the remainder one divisor more. Where bounds show that cannot happen (index
  // arithmetic over ranges by positive constants), the rewrites fold the correction away.
  int Floor(int i, Scalar t) {
    const int a = Source(i, 0), b = Source(i, 1);
    const bool div = node(i).op() == v1::Node::FLOORDIV;
    const int q = Add(Make(v1::Node::IDIV, t, {a, b}));
    const int r = Add(Make(v1::Node::MOD, t, {a, b}));
    const int zero = IntConst(t, 0);
    const int remainder = Add(Make(v1::Node::CMPNE, v1::DType::BOOL, {r, zero}));
    const int r_negative = Add(Make(v1::Node::CMPLT, v1::DType::BOOL, {r, zero}));
    const int b_negative = Add(Make(v1::Node::CMPLT, v1::DType::BOOL, {b, zero}));
    const int signs_differ = Add(Make(v1::Node::CMPNE, v1::DType::BOOL, {r_negative, b_negative}));
    const int adjust = Add(Make(v1::Node::AND, v1::DType::BOOL, {remainder, signs_differ}));
    const int corrected = div ? Add(Make(v1::Node::ADD, t, {q, IntConst(t, -1)}))
                              : Add(Make(v1::Node::ADD, t, {r, b}));
    return Add(Make(v1::Node::WHERE, t, {adjust, corrected, div ? q : r}));
  }

  // A store whose value 0.14 gates with a WHERE: the gate moves to the index (an invalid
  // index stores nothing), as 0.12 spells it.
  absl::StatusOr<int> EmitGatedStore(int i, const GatedStore& g) {
    const int buffer = BufferOf(g.buffer);
    if (buffer < 0) return Error(i, "a stored-to INDEX must address a buffer PARAM");
    UOPD_ASSIGN_OR_RETURN(v1::DType pointer, BufferDType(buffer));
    v1::Node invalid = Make(v1::Node::CONST, v1::DType::INDEX, {});
    invalid.mutable_arg()->set_invalid(true);
    const int gated_index =
        Add(Make(v1::Node::WHERE, v1::DType::INDEX,
                 {Emitted(g.cond, g.cond_variant), Emitted(g.index, VariantOfSource(g.target, 1)),
                  Add(std::move(invalid))}));
    v1::Node target = Make(v1::Node::INDEX, v1::DType::VOID,
                           {Emitted(g.buffer, VariantOfSource(g.target, 0)), gated_index});
    *target.mutable_dtype() = pointer;
    const int target_at = Add(std::move(target));
    return Add(
        Make(v1::Node::STORE, v1::DType::VOID, {target_at, Emitted(g.value, g.value_variant)}));
  }

  // A PARAM: a variable (DEFINE_VAR), a buffer (DEFINE_GLOBAL) or a register placeholder
  // (DEFINE_REG: tinygrad's BUFFER of AddrSpace.REG, a per-thread array).
  absl::StatusOr<int> EmitParam(int i) {
    const v1::ParamArg& p = node(i).arg().param();
    if (IsVariable(i)) {
      if (!p.has_bounds()) return Error(i, "a variable needs bounds (vmin_vmax)");
      v1::Node var = Make(v1::Node::DEFINE_VAR, Committed(scalar(i)), {});
      v1::VarArg* arg = var.mutable_arg()->mutable_var();
      arg->set_name(p.name());
      arg->set_min(p.min());
      arg->set_max(p.max());
      if (p.multiple_of() > 1) arg->set_multiple_of(p.multiple_of());
      return Add(std::move(var));
    }
    if (p.addrspace() == v1::DType::LOCAL) {
      return Error(i, "local (shared-memory) placeholders are not supported yet");
    }
    absl::StatusOr<v1::DType> dtype = BufferDType(i);
    if (!dtype.ok()) return dtype.status();
    v1::Node buffer =
        Make(p.addrspace() == v1::DType::REG ? v1::Node::DEFINE_REG : v1::Node::DEFINE_GLOBAL,
             v1::DType::VOID, {});
    *buffer.mutable_dtype() = *dtype;
    buffer.mutable_arg()->set_i64(p.slot());
    return Add(std::move(buffer));
  }

  // A REDUCE over its RANGE sources; a masked one (WHERE(mask, x, 0)) keeps its identity.
  absl::StatusOr<int> EmitReduce(int i) {
    const v1::Node& n = node(i);
    if (n.arg().ints_size() > 1 || (n.arg().ints_size() == 1 && n.arg().ints(0) != 0)) {
      return Error(i, "a kernel's REDUCE reduces over its RANGE sources: (op, 0)");
    }
    if (n.src_size() == 0) return Error(i, "a REDUCE needs the value it reduces as source 0");
    const int masked = MaskedReduceWhere(i);
    int identity_where = -1;
    if (masked >= 0) {
      UOPD_ASSIGN_OR_RETURN(const int identity, ReduceIdentity(i));
      v1::Node where = Make(v1::Node::WHERE, Committed(scalar(i)),
                            {Emitted(node(masked).src(0), VariantOfSource(masked, 0)),
                             Emitted(node(masked).src(1), VariantOfSource(masked, 1)), identity});
      where.mutable_dtype()->set_count(node(i).dtype().count());
      identity_where = Add(std::move(where));
    }
    v1::Node reduce = Make(v1::Node::REDUCE, Committed(scalar(i)), {});
    *reduce.mutable_dtype() = node(i).dtype();
    reduce.mutable_dtype()->set_scalar(Committed(scalar(i)));
    *reduce.mutable_arg() = n.arg();
    reduce.mutable_arg()->clear_ints();
    reduce.add_src(masked >= 0 ? identity_where : Source(i, 0));
    for (int pos = 1; pos < n.src_size(); ++pos) reduce.add_src(Source(i, pos));
    return Add(std::move(reduce));
  }

  absl::StatusOr<int> Emit(int i, int variant) {
    const v1::Node& n = node(i);
    if (IsLiteral(i)) return Literal(i, static_cast<Scalar>(variant));
    if (IsWeakValue(i) && variant != Committed(scalar(i))) {
      const int committed = Committed(scalar(i));
      if (!emitted_[i].contains(committed)) {
        UOPD_ASSIGN_OR_RETURN(emitted_[i][committed], Emit(i, committed));
      }
      return Add(Make(v1::Node::CAST, static_cast<Scalar>(variant), {emitted_[i][committed]}));
    }
    if (GatedStore g; AsGatedStore(i, &g)) return EmitGatedStore(i, g);
    switch (n.op()) {
      case v1::Node::PARAM:
        return EmitParam(i);
      case v1::Node::INDEX: {
        v1::Node index = Like(i);
        if (variant == kTarget) {
          const int buffer = n.src_size() > 0 ? BufferOf(n.src(0)) : -1;
          if (buffer < 0) return Error(i, "a stored-to INDEX must address a buffer PARAM");
          absl::StatusOr<v1::DType> dtype = BufferDType(buffer);
          if (!dtype.ok()) return dtype.status();
          *index.mutable_dtype() = *dtype;
        }
        return Add(std::move(index));
      }
      case v1::Node::AFTER: {
        v1::Node after = WithoutDeviceRanges(i);
        if (const int buffer = BufferOf(i); buffer >= 0) {
          absl::StatusOr<v1::DType> dtype = BufferDType(buffer);
          if (!dtype.ok()) return dtype.status();
          *after.mutable_dtype() = *dtype;
        }
        return Add(std::move(after));
      }
      case v1::Node::CDIV:
      case v1::Node::CMOD: {
        v1::Node c = Like(i);
        c.set_op(n.op() == v1::Node::CDIV ? v1::Node::IDIV : v1::Node::MOD);
        return Add(std::move(c));
      }
      case v1::Node::FLOORDIV:
      case v1::Node::FLOORMOD: {
        const Scalar t = Committed(scalar(i));
        if (IsFloat(t)) return Error(i, "floor division of floats is not an IR operation");
        if (n.src_size() != 2) return Error(i, "needs two sources");
        if (IsUnsigned(t) || t == v1::DType::BOOL) {
          v1::Node c = Like(i);
          c.set_op(n.op() == v1::Node::FLOORDIV ? v1::Node::IDIV : v1::Node::MOD);
          return Add(std::move(c));
        }
        return Floor(i, t);
      }
      case v1::Node::STACK: {
        if (n.src_size() == 0) return Error(i, "an empty STACK is only a scalar PARAM's shape");
        v1::Node vec = Like(i);
        vec.set_op(v1::Node::VECTORIZE);
        vec.mutable_dtype()->set_count(n.src_size());
        if (vec.dtype().scalar() == v1::DType::VOID) {
          vec.mutable_dtype()->set_scalar(Committed(scalar(n.src(0))));
        }
        return Add(std::move(vec));
      }
      case v1::Node::REDUCE:
        return EmitReduce(i);
      case v1::Node::RECIPROCAL:
      case v1::Node::SQRT:
      case v1::Node::EXP2:
      case v1::Node::LOG2:
      case v1::Node::SIN: {
        // 0.14 applies these to an integer operand and types the result float (an int's
        // reciprocal, for `a / b`): the operand converted to the result's type first.
        v1::Node op = Like(i);
        if (n.src_size() == 1 && IsFloat(Committed(scalar(i))) &&
            !IsFloat(Committed(scalar(n.src(0))))) {
          v1::Node cast = Make(v1::Node::CAST, Committed(scalar(i)), {Source(i, 0)});
          cast.mutable_dtype()->set_count(node(i).dtype().count());
          op.set_src(0, Add(std::move(cast)));
        }
        return Add(std::move(op));
      }
      case v1::Node::CAST:
      case v1::Node::BITCAST: {
        v1::Node cast = Like(i);
        cast.clear_arg();  // the target type is the node's dtype
        return Add(std::move(cast));
      }
      case v1::Node::END: {
        v1::Node end = WithoutDeviceRanges(i);
        if (end.src_size() == 1) return end.src(0);  // it ended only the DEVICE range
        return Add(std::move(end));
      }
      case v1::Node::RANGE: {
        if (IsDeviceRange(i)) {
          v1::Node var = Make(v1::Node::DEFINE_VAR, Committed(scalar(i)), {});
          v1::VarArg* arg = var.mutable_arg()->mutable_var();
          arg->set_name("_device_num");
          arg->set_min(0);
          arg->set_max(node(n.src(0)).arg().i64() - 1);
          return Add(std::move(var));
        }
        v1::Node range = Like(i);
        v1::RangeArg* arg = range.mutable_arg()->mutable_range();
        if (arg->type() == v1::RangeArg::WEAK) {
          arg->set_type(v1::RangeArg::LOOP);
        } else if (arg->type() == v1::RangeArg::LOOP) {
          arg->set_type(v1::RangeArg::OUTER);
        }
        return Add(std::move(range));
      }
      default:
        return Add(Like(i));
    }
  }

  const v1::Graph& in_;
  const int n_;
  std::vector<std::set<int>> demanded_;
  std::vector<absl::flat_hash_map<int, int>> emitted_;
  // MaskIsOutsideReduce's answers, by REDUCE and by (condition, range axes), and its work so far.
  mutable absl::flat_hash_map<int, bool> mask_outside_reduce_;
  mutable std::map<std::pair<int, std::set<std::vector<int64_t>>>, bool> mask_outside_ranges_;
  mutable int64_t mask_search_edges_ = 0;
  const int64_t max_nodes_;
  v1::Graph out_;
};

}  // namespace

absl::StatusOr<v1::Graph> TranslateTinygrad014(const v1::Graph& graph, int64_t max_nodes) {
  if (graph.nodes_size() > max_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph has ", graph.nodes_size(), " nodes, over the limit of ", max_nodes));
  }
  return Translator(graph, max_nodes).Run();
}

}  // namespace uopd
