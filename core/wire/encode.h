// Encoding: interned UOps back to the wire Graph, in topological order with the root last.
#ifndef UOPD_CORE_WIRE_ENCODE_H_
#define UOPD_CORE_WIRE_ENCODE_H_

#include "core/ir/uop.h"
#include "uopd/v1/graph.pb.h"

namespace uopd {

// Every node reachable from `root` exactly once, sources before users.
v1::Graph EncodeGraph(const UOp* root);

// `arg` as the wire spells it, into node->arg (left unset for an empty one).
void EncodeArg(const Arg& arg, v1::Node* node);

}  // namespace uopd

#endif  // UOPD_CORE_WIRE_ENCODE_H_
