// Graph: the arena and intern table that owns the UOps of one kernel AST.
//
// Each request decodes into its own Graph; its nodes die with it (no process-wide node cache).
// Make() returns the existing node for an equal (op, dtype, sources, arg), so passes that rebuild
// nothing return the very same pointers. One thread at a time; the UOps it hands out are immutable
// and may be read from any thread while the Graph lives.
#ifndef UOPD_CORE_IR_GRAPH_H_
#define UOPD_CORE_IR_GRAPH_H_

#include <deque>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/ir/uop.h"

namespace uopd {

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Returns the unique node for these fields. REQUIRES: every source belongs to this Graph.
  const UOp* Make(Op op, DType dtype, std::vector<const UOp*> src = {}, Arg arg = {});
  const UOp* ConstInt(Scalar scalar, int64_t value) {
    return Make(Op::kConst, DType::Of(scalar), {}, Arg::I64(value));
  }

  // Number of distinct nodes created so far.
  size_t size() const { return nodes_.size(); }

 private:
  struct Key {
    Op op;
    DType dtype;
    const std::vector<const UOp*>* src;
    const Arg* arg;
    friend bool operator==(const Key& a, const Key& b) {
      return a.op == b.op && a.dtype == b.dtype && *a.src == *b.src && *a.arg == *b.arg;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.op, k.dtype, *k.src, *k.arg);
    }
  };

  std::deque<UOp> nodes_;  // deque: stable addresses as it grows
  absl::flat_hash_map<Key, const UOp*> intern_;
};

// Every node reachable from `root`, sources before users (ascending creation order). Iterative:
// safe for arbitrarily deep graphs.
std::vector<const UOp*> Toposort(const UOp* root);

// Whether `node` is reachable from `root` (is `root` or under it). Iterative, stops early.
bool DependsOn(const UOp* root, const UOp* node);

}  // namespace uopd

#endif  // UOPD_CORE_IR_GRAPH_H_
