// Decoding: the wire Graph (proto) into interned UOps, validating every node as it goes: the
// IR's own dialect (tinygrad 0.12's spelling); other dialects are rewritten into it first.
#ifndef UOPD_CORE_WIRE_DECODE_H_
#define UOPD_CORE_WIRE_DECODE_H_

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/ir/graph.h"
#include "core/ir/kernel_ast.h"
#include "core/ir/limits.h"
#include "core/wire/decode.h"
#include "uopd/v1/graph.pb.h"

namespace uopd {

struct DecodedGraph {
  const UOp* root = nullptr;
  // The first wire index of each node (duplicates on the wire merge into one UOp), so later
  // errors can name the node the way the client numbered it.
  absl::flat_hash_map<const UOp*, int> wire_index;
};

// Decodes and validates `wire` into `graph` (IR.md "Validation"). Errors are INVALID_ARGUMENT
// naming the wire node index, its op and the rule broken, or UNIMPLEMENTED for well-formed
// constructs this server does not support yet (post-lowering ops, vector dtypes).
// Never recurses on client data. `graph` keeps whatever nodes were made before an error.
absl::StatusOr<DecodedGraph> DecodeGraph(const v1::Graph& wire, Graph& graph,
                                         const IrLimits& limits = {});

// Decodes an integer expression (a symbolic launch size): like DecodeGraph, but the root is the
// last node and must have an integer dtype instead of being a SINK.
absl::StatusOr<const UOp*> DecodeExpression(const v1::Graph& wire, Graph& graph,
                                            const IrLimits& limits = {});

// Decodes and validates a kernel's `wire` graph in whichever dialect it names (0.14's is
// rewritten into 0.12's spelling first, tinygrad_0_14.h), hashes it as sent, and flattens its
// RESHAPEs for what runs. The errors are DecodeGraph's.
absl::StatusOr<std::shared_ptr<const KernelAst>> DecodeKernelAst(const v1::Graph& wire,
                                                                 const IrLimits& limits = {});

}  // namespace uopd

#endif  // UOPD_CORE_WIRE_DECODE_H_
