#include "core/ir/copy_expression.h"

#include "absl/container/flat_hash_map.h"

namespace uopd {

const UOp* CopyExpression(Graph& dst, const UOp* expr) {
  absl::flat_hash_map<const UOp*, const UOp*> copied;
  for (const UOp* node : Toposort(expr)) {
    std::vector<const UOp*> src;
    for (const UOp* s : node->src()) src.push_back(copied.at(s));
    copied[node] = dst.Make(node->op(), node->dtype(), std::move(src), node->arg());
  }
  return copied.at(expr);
}

}  // namespace uopd
