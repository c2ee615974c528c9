#include "core/wire/encode.h"

#include "absl/container/flat_hash_map.h"
#include "core/ir/graph.h"

namespace uopd {
namespace {

void EncodeDType(const DType& dtype, v1::DType* out) {
  out->set_scalar(static_cast<v1::DType::Scalar>(dtype.scalar));
  if (dtype.count != 1) out->set_count(dtype.count);
  if (dtype.ptr) {
    out->set_ptr(true);
    out->set_size(dtype.size);
    out->set_addrspace(static_cast<v1::DType::AddrSpace>(dtype.addrspace));
  }
}

}  // namespace

void EncodeArg(const Arg& arg, v1::Node* node) {
  if (arg.kind == ArgKind::kNone && arg.ints.empty()) return;
  v1::Arg* out = node->mutable_arg();
  switch (arg.kind) {
    case ArgKind::kNone:
      break;
    case ArgKind::kI64:
      out->set_i64(arg.i);
      break;
    case ArgKind::kU64:
      out->set_u64(static_cast<uint64_t>(arg.i));
      break;
    case ArgKind::kF64:
      out->set_f64(arg.f);
      break;
    case ArgKind::kBool:
      out->set_b(arg.b);
      break;
    case ArgKind::kInvalid:
      out->set_invalid(true);
      break;
    case ArgKind::kRange:
      for (int64_t axis : arg.axis) out->mutable_range()->add_axis(axis);
      out->mutable_range()->set_type(static_cast<v1::RangeArg::AxisType>(arg.axis_type));
      break;
    case ArgKind::kVar:
      out->mutable_var()->set_name(arg.str);
      out->mutable_var()->set_min(arg.var_min);
      out->mutable_var()->set_max(arg.var_max);
      if (arg.var_multiple > 1) out->mutable_var()->set_multiple_of(arg.var_multiple);
      break;
    case ArgKind::kReduceOp:
      out->set_op(static_cast<v1::Node::Op>(arg.reduce_op));
      break;
    case ArgKind::kKernel:
      out->mutable_kernel()->set_name(arg.str);
      break;
    case ArgKind::kStr:
      out->set_str(arg.str);
      break;
  }
  for (int64_t v : arg.ints) out->add_ints(v);
}

v1::Graph EncodeGraph(const UOp* root) {
  v1::Graph wire;
  absl::flat_hash_map<const UOp*, int> index;
  for (const UOp* node : Toposort(root)) {
    v1::Node* out = wire.add_nodes();
    out->set_op(static_cast<v1::Node::Op>(node->op()));
    EncodeDType(node->dtype(), out->mutable_dtype());
    for (const UOp* src : node->src()) out->add_src(index.at(src));
    EncodeArg(node->arg(), out);
    index[node] = wire.nodes_size() - 1;
  }
  return wire;
}

}  // namespace uopd
