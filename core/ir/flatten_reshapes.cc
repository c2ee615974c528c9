#include "core/ir/flatten_reshapes.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace uopd {
const std::vector<int64_t>* ReshapedShape(const UOp* buf) {
  while (buf->op() == Op::kAfter) buf = buf->src(0);
  return buf->op() == Op::kReshape ? &buf->arg().ints : nullptr;
}

const UOp* FlattenReshapes(Graph& graph, const UOp* root) {
  std::vector<const UOp*> order = Toposort(root);
  if (std::none_of(order.begin(), order.end(),
                   [](const UOp* n) { return n->op() == Op::kReshape; })) {
    return root;
  }
  const DType index = DType::Of(Scalar::kIndex);
  absl::flat_hash_map<const UOp*, const UOp*> rebuilt;
  for (const UOp* node : order) {
    std::vector<const UOp*> src;
    for (const UOp* s : node->src()) src.push_back(rebuilt.at(s));
    if (node->op() == Op::kReshape) {
      rebuilt[node] = src[0];
      continue;
    }
    const std::vector<int64_t>* shape =
        node->op() == Op::kIndex ? ReshapedShape(node->src(0)) : nullptr;
    if (shape != nullptr && shape->size() > 1) {
      const UOp* flat = nullptr;
      int64_t stride = 1;
      for (size_t d = shape->size(); d-- > 0;) {
        const UOp* i = src[d + 1];
        if (i->dtype() != index) i = graph.Make(Op::kCast, index, {i});
        const UOp* term =
            stride == 1 ? i
                        : graph.Make(Op::kMul, index, {i, graph.ConstInt(Scalar::kIndex, stride)});
        flat = flat == nullptr ? term : graph.Make(Op::kAdd, index, {term, flat});
        stride *= (*shape)[d];
      }
      src = {src[0], flat};
    }
    rebuilt[node] = graph.Make(node->op(), node->dtype(), std::move(src), node->arg());
  }
  return rebuilt.at(root);
}

}  // namespace uopd
