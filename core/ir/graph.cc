#include "core/ir/graph.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace uopd {

const UOp* Graph::Make(Op op, DType dtype, std::vector<const UOp*> src, Arg arg) {
  Key probe{op, dtype, &src, &arg};
  if (auto it = intern_.find(probe); it != intern_.end()) return it->second;
  const UOp& node = nodes_.emplace_back(
      UOp(op, dtype, std::move(src), std::move(arg), static_cast<uint32_t>(nodes_.size())));
  // The key points into the node itself, which never moves.
  intern_.emplace(Key{node.op(), node.dtype(), &node.src_, &node.arg_}, &node);
  return &node;
}

std::vector<const UOp*> Toposort(const UOp* root) {
  std::vector<const UOp*> order;
  absl::flat_hash_set<const UOp*> seen;
  std::vector<const UOp*> stack = {root};
  seen.insert(root);
  while (!stack.empty()) {
    const UOp* node = stack.back();
    stack.pop_back();
    order.push_back(node);
    for (const UOp* src : node->src()) {
      if (seen.insert(src).second) stack.push_back(src);
    }
  }
  std::sort(order.begin(), order.end(),
            [](const UOp* a, const UOp* b) { return a->id() < b->id(); });
  return order;
}

bool DependsOn(const UOp* root, const UOp* node) {
  absl::flat_hash_set<const UOp*> seen = {root};
  std::vector<const UOp*> stack = {root};
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (n == node) return true;
    for (const UOp* src : n->src()) {
      if (seen.insert(src).second) stack.push_back(src);
    }
  }
  return false;
}

}  // namespace uopd
