#include "core/wire/decode.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ir/flatten_reshapes.h"
#include "core/ir/hash.h"
#include "core/ir/printer.h"
#include "core/ir/verify.h"
#include "core/util/status_macros.h"
#include "core/wire/tinygrad_0_14.h"

namespace uopd {
namespace {

// "node 17 ADD float32 (src 3, 9)": how errors name a wire node.
std::string DescribeWire(int index, const v1::Node& node) {
  auto op_name = OpNameIfKnown(node.op());
  std::string out = absl::StrCat("node ", index, " ", op_name ? *op_name : "?");
  if (const std::optional<Scalar> scalar = ScalarFromNumber(node.dtype().scalar())) {
    DType dtype{*scalar, node.dtype().count() == 0 ? 1 : node.dtype().count(), node.dtype().ptr(),
                node.dtype().size(), static_cast<AddrSpace>(node.dtype().addrspace())};
    absl::StrAppend(&out, " ", DTypeToString(dtype));
  }
  if (node.src_size() > 0) {
    absl::StrAppend(&out, " (src ", NameSources(node.src(), absl::AlphaNumFormatter()), ")");
  }
  return out;
}

absl::Status NodeError(absl::StatusCode code, int index, const v1::Node& node,
                       absl::string_view rule) {
  return absl::Status(code, absl::StrCat(DescribeWire(index, node), ": ", rule));
}

absl::StatusOr<DType> DecodeDType(const v1::DType& wire) {
  const int number = wire.scalar();
  const std::optional<Scalar> scalar = ScalarFromNumber(number);
  if (!scalar) {
    return absl::InvalidArgumentError(number == 0 ? "dtype has no scalar type"
                                                  : absl::StrCat("unknown dtype scalar ", number));
  }
  if (wire.addrspace() < 0 || wire.addrspace() > 2) {
    return absl::InvalidArgumentError(absl::StrCat("unknown address space ", wire.addrspace()));
  }
  if (!wire.ptr() && (wire.size() != 0 || wire.addrspace() != 0)) {
    return absl::InvalidArgumentError("size and addrspace are only for pointer dtypes");
  }
  if (wire.count() < 0) return absl::InvalidArgumentError("negative vector count");
  DType dtype;
  dtype.scalar = *scalar;
  dtype.count = wire.count() == 0 ? 1 : wire.count();
  dtype.ptr = wire.ptr();
  dtype.size = wire.ptr() ? wire.size() : -1;
  dtype.addrspace = static_cast<AddrSpace>(wire.addrspace());
  return dtype;
}

absl::StatusOr<Arg> DecodeArg(const v1::Node& node) {
  Arg arg;
  if (!node.has_arg()) return arg;
  const v1::Arg& wire = node.arg();
  arg.ints.assign(wire.ints().begin(), wire.ints().end());
  switch (wire.value_case()) {
    case v1::Arg::VALUE_NOT_SET:
      break;
    case v1::Arg::kI64:
      arg.kind = ArgKind::kI64;
      arg.i = wire.i64();
      break;
    case v1::Arg::kU64:
      arg.kind = ArgKind::kU64;
      arg.i = static_cast<int64_t>(wire.u64());
      break;
    case v1::Arg::kF64:
      arg.kind = ArgKind::kF64;
      arg.f = wire.f64();
      break;
    case v1::Arg::kB:
      arg.kind = ArgKind::kBool;
      arg.b = wire.b();
      break;
    case v1::Arg::kInvalid:
      if (!wire.invalid()) return absl::InvalidArgumentError("invalid must be true when set");
      arg.kind = ArgKind::kInvalid;
      break;
    case v1::Arg::kRange: {
      int type = wire.range().type();
      if (type < 1 || type > kMaxAxisType) {
        return absl::InvalidArgumentError(absl::StrCat("unknown axis type ", type));
      }
      arg = Arg::Range({wire.range().axis().begin(), wire.range().axis().end()},
                       static_cast<AxisType>(type));
      arg.ints.assign(wire.ints().begin(), wire.ints().end());
      break;
    }
    case v1::Arg::kVar:
      arg.kind = ArgKind::kVar;
      arg.str = wire.var().name();
      arg.var_min = wire.var().min();
      arg.var_max = wire.var().max();
      arg.var_multiple = wire.var().multiple_of() == 0 ? 1 : wire.var().multiple_of();
      break;
    case v1::Arg::kOp:
      if (!OpNameIfKnown(wire.op())) {
        return absl::InvalidArgumentError(absl::StrCat("unknown op ", wire.op(), " in argument"));
      }
      arg.kind = ArgKind::kReduceOp;
      arg.reduce_op = static_cast<Op>(wire.op());
      break;
    case v1::Arg::kKernel:
      arg.kind = ArgKind::kKernel;
      arg.str = wire.kernel().name();
      break;
    case v1::Arg::kStr:
      arg.kind = ArgKind::kStr;
      arg.str = wire.str();
      break;
  }
  return arg;
}

}  // namespace

namespace {

// Decodes and verifies every node; the root (last node) is not checked here.
absl::StatusOr<DecodedGraph> DecodeNodes(const v1::Graph& wire, Graph& graph,
                                         const IrLimits& limits) {
  const int num_nodes = wire.nodes_size();
  if (num_nodes == 0) return absl::InvalidArgumentError("graph has no nodes");
  if (num_nodes > limits.max_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph has ", num_nodes, " nodes, over the limit of ", limits.max_nodes));
  }
  DecodedGraph decoded;
  std::vector<const UOp*> by_wire(num_nodes);
  std::vector<int64_t> depth(num_nodes);
  absl::flat_hash_map<int64_t, const UOp*> slot_owner;  // DEFINE_GLOBAL slot -> first node

  for (int i = 0; i < num_nodes; ++i) {
    const v1::Node& node = wire.nodes(i);
    auto fail = [&](absl::string_view rule) {
      return NodeError(absl::StatusCode::kInvalidArgument, i, node, rule);
    };
    if (node.op() == 0) return fail("op is missing");
    if (!OpNameIfKnown(node.op())) return fail(absl::StrCat("unknown op ", node.op()));
    auto dtype = DecodeDType(node.dtype());
    if (!dtype.ok()) return fail(dtype.status().message());
    auto arg = DecodeArg(node);
    if (!arg.ok()) return fail(arg.status().message());

    std::vector<const UOp*> src;
    src.reserve(node.src_size());
    int64_t node_depth = 0;
    for (int32_t s : node.src()) {
      if (s < 0 || s >= i) {
        return fail(
            absl::StrCat("source index ", s, " is not an earlier node (must be in [0, ", i, "))"));
      }
      src.push_back(by_wire[s]);
      node_depth = std::max(node_depth, depth[s] + 1);
    }
    if (node_depth > limits.max_depth) {
      return fail(absl::StrCat("graph depth exceeds the limit of ", limits.max_depth));
    }
    const UOp* uop =
        graph.Make(static_cast<Op>(node.op()), *dtype, std::move(src), *std::move(arg));
    if (absl::Status verified = VerifyNode(*uop, limits); !verified.ok()) {
      return NodeError(verified.code(), i, node, verified.message());
    }
    if (uop->op() == Op::kDefineGlobal) {
      auto [it, inserted] = slot_owner.emplace(uop->arg().i, uop);
      if (!inserted && it->second->dtype() != uop->dtype()) {
        return fail(absl::StrCat("slot ", uop->arg().i, " is also defined as ",
                                 DTypeToString(it->second->dtype()), " by node ",
                                 decoded.wire_index.at(it->second)));
      }
    }
    by_wire[i] = uop;
    depth[i] = node_depth;
    decoded.wire_index.emplace(uop, i);
  }

  decoded.root = by_wire.back();
  return decoded;
}

}  // namespace

absl::StatusOr<DecodedGraph> DecodeGraph(const v1::Graph& wire, Graph& graph,
                                         const IrLimits& limits) {
  auto decoded = DecodeNodes(wire, graph, limits);
  if (decoded.ok() && decoded->root->op() != Op::kSink) {
    const int last = wire.nodes_size() - 1;
    return NodeError(absl::StatusCode::kInvalidArgument, last, wire.nodes(last),
                     "the root (last node) must be a SINK");
  }
  return decoded;
}

absl::StatusOr<const UOp*> DecodeExpression(const v1::Graph& wire, Graph& graph,
                                            const IrLimits& limits) {
  auto decoded = DecodeNodes(wire, graph, limits);
  if (!decoded.ok()) return decoded.status();
  const DType& dtype = decoded->root->dtype();
  if (dtype.ptr || !IsInt(dtype.scalar)) {
    const int last = wire.nodes_size() - 1;
    return NodeError(absl::StatusCode::kInvalidArgument, last, wire.nodes(last),
                     "an expression's root (last node) must be an integer");
  }
  return decoded->root;
}

absl::StatusOr<std::shared_ptr<const KernelAst>> DecodeKernelAst(const v1::Graph& wire,
                                                                 const IrLimits& limits) {
  if (wire.dialect() == v1::TINYGRAD_0_14) {
    UOPD_ASSIGN_OR_RETURN(v1::Graph spelled, TranslateTinygrad014(wire, limits.max_nodes));
    return DecodeKernelAst(spelled, limits);
  }
  auto ast = std::make_shared<KernelAst>();
  auto decoded = DecodeGraph(wire, ast->graph, limits);
  if (!decoded.ok()) return decoded.status();
  // The hash is of the kernel as the client sent it; what runs has its RESHAPEs flattened.
  ast->hash = AstHashHex(decoded->root);
  ast->root = FlattenReshapes(ast->graph, decoded->root);
  return ast;
}

}  // namespace uopd
