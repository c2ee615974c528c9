// Test helper: builds wire Graphs node by node, in C++, for hand-made kernels.
#ifndef UOPD_TESTS_TESTING_GRAPH_BUILDER_H_
#define UOPD_TESTS_TESTING_GRAPH_BUILDER_H_

#include <string>
#include <vector>

#include "uopd/v1/graph.pb.h"

namespace uopd::testing {

class GraphBuilder {
 public:
  using S = v1::DType::Scalar;

  int Node(v1::Node::Op op, S scalar, std::vector<int> src = {}) {
    v1::Node* node = graph_.add_nodes();
    node->set_op(op);
    node->mutable_dtype()->set_scalar(scalar);
    for (int s : src) node->add_src(s);
    return graph_.nodes_size() - 1;
  }
  int Buffer(int slot, S scalar, int64_t size) {
    int n = Node(v1::Node::DEFINE_GLOBAL, scalar);
    Mut(n)->mutable_dtype()->set_ptr(true);
    Mut(n)->mutable_dtype()->set_size(size);
    Mut(n)->mutable_arg()->set_i64(slot);
    return n;
  }
  // A register array (DEFINE_REG): `size` elements of `scalar`, one array per thread.
  int Registers(int id, S scalar, int64_t size) {
    int n = Node(v1::Node::DEFINE_REG, scalar);
    Mut(n)->mutable_dtype()->set_ptr(true);
    Mut(n)->mutable_dtype()->set_size(size);
    Mut(n)->mutable_dtype()->set_addrspace(v1::DType::REG);
    Mut(n)->mutable_arg()->set_i64(id);
    return n;
  }
  // Buffer node `buf` (DEFINE_GLOBAL, DEFINE_REG or an AFTER of one) ordered after `deps`
  // (statements, or ranges: inside their loops).
  int After(int buf, std::vector<int> deps) {
    deps.insert(deps.begin(), buf);
    int n = Node(v1::Node::AFTER, v1::DType::VOID, deps);
    *Mut(n)->mutable_dtype() = graph_.nodes(buf).dtype();
    return n;
  }
  int Index(int64_t v) { return Int(v1::DType::INDEX, v); }
  int Int(S scalar, int64_t v) {
    int n = Node(v1::Node::CONST, scalar);
    Mut(n)->mutable_arg()->set_i64(v);
    return n;
  }
  int Float(S scalar, double v) {
    int n = Node(v1::Node::CONST, scalar);
    Mut(n)->mutable_arg()->set_f64(v);
    return n;
  }
  int Bool(bool v) {
    int n = Node(v1::Node::CONST, v1::DType::BOOL);
    Mut(n)->mutable_arg()->set_b(v);
    return n;
  }
  int Invalid() {
    int n = Node(v1::Node::CONST, v1::DType::INDEX);
    Mut(n)->mutable_arg()->set_invalid(true);
    return n;
  }
  int Var(const std::string& name, int64_t min, int64_t max) {
    int n = Node(v1::Node::DEFINE_VAR, v1::DType::INDEX);
    auto* var = Mut(n)->mutable_arg()->mutable_var();
    var->set_name(name);
    var->set_min(min);
    var->set_max(max);
    return n;
  }
  int Range(int end, int axis, v1::RangeArg::AxisType type = v1::RangeArg::LOOP) {
    int n = Node(v1::Node::RANGE, v1::DType::INDEX, {end});
    Mut(n)->mutable_arg()->mutable_range()->add_axis(axis);
    Mut(n)->mutable_arg()->mutable_range()->set_type(type);
    return n;
  }
  // row * width + col: element (row, col) of a row-major matrix `width` wide.
  int RowMajor(int row, int64_t width, int col) {
    int stride = Index(width);
    int start = Node(v1::Node::MUL, v1::DType::INDEX, {row, stride});
    return Node(v1::Node::ADD, v1::DType::INDEX, {start, col});
  }
  // A load (element-typed INDEX) of buffer node `buf` at `idx`.
  int Load(int buf, int idx) {
    return Node(v1::Node::INDEX, graph_.nodes(buf).dtype().scalar(), {buf, idx});
  }
  // A store target (pointer-typed INDEX).
  int Target(int buf, int idx) {
    int n = Node(v1::Node::INDEX, graph_.nodes(buf).dtype().scalar(), {buf, idx});
    *Mut(n)->mutable_dtype() = graph_.nodes(buf).dtype();
    return n;
  }
  int Store(int target, int value) {
    return Node(v1::Node::STORE, v1::DType::VOID, {target, value});
  }
  int End(int stmt, std::vector<int> ranges) {
    ranges.insert(ranges.begin(), stmt);
    return Node(v1::Node::END, v1::DType::VOID, ranges);
  }
  int Reduce(v1::Node::Op op, S scalar, int value, std::vector<int> ranges) {
    ranges.insert(ranges.begin(), value);
    int n = Node(v1::Node::REDUCE, scalar, ranges);
    Mut(n)->mutable_arg()->set_op(op);
    return n;
  }
  v1::Graph Sink(std::vector<int> stmts, const std::string& name = "") {
    int n = Node(v1::Node::SINK, v1::DType::VOID, stmts);
    if (!name.empty()) Mut(n)->mutable_arg()->mutable_kernel()->set_name(name);
    return graph_;
  }

  v1::Node* Mut(int n) { return graph_.mutable_nodes(n); }
  // The nodes so far: an expression's graph (a symbolic launch size) ends at its root.
  const v1::Graph& graph() const { return graph_; }

 private:
  v1::Graph graph_;
};

// out[i, j] = sum_k a[i, k] * b[k, j] in float32: slot 0 is out (m x n), 1 is a (m x k), 2 is b
// (k x n).
// With `in` inputs and an `acc` output, the product is CAST to `acc` before the sum (tinygrad's
// half matmul with a float accumulator, what a tensor core computes).
struct MatmulVariant {
  double a_scale = 1;          // a[i, k] * a_scale: a padded 0 stays 0 only if it is finite
  bool second_output = false;  // also out[0] = 0 in a statement of its own (no grid then)
};
inline v1::Graph Matmul(int64_t m, int64_t k, int64_t n, v1::DType::Scalar in = v1::DType::FLOAT32,
                        v1::DType::Scalar acc = v1::DType::FLOAT32, MatmulVariant variant = {}) {
  GraphBuilder g;
  int out = g.Buffer(0, acc, m * n);
  int i = g.Range(g.Index(m), 0);
  int j = g.Range(g.Index(n), 1);
  int a = g.Buffer(1, in, m * k);
  int b = g.Buffer(2, in, k * n);
  int r = g.Range(g.Index(k), 2, v1::RangeArg::REDUCE);
  int a_value = g.Load(a, g.RowMajor(i, k, r));
  if (variant.a_scale != 1)
    a_value = g.Node(v1::Node::MUL, in, {a_value, g.Float(in, variant.a_scale)});
  int product = g.Node(v1::Node::MUL, in, {a_value, g.Load(b, g.RowMajor(r, n, j))});
  if (in != acc) product = g.Node(v1::Node::CAST, acc, {product});
  int sum = g.Reduce(v1::Node::ADD, acc, product, {r});
  int matmul = g.End(g.Store(g.Target(out, g.RowMajor(i, n, j)), sum), {i, j});
  if (!variant.second_output) return g.Sink({matmul});
  return g.Sink({matmul, g.Store(g.Target(out, g.Index(0)), g.Float(acc, 0))});
}

// var[i] = sum_j (x[i, j] - sum_k x[i, k] / cols)^2 in float32, a reduction (over j, axis 1)
// holding another (the mean, over k, axis 2): slot 0 is var (rows), 1 is x (rows x cols).
inline v1::Graph Variance(int64_t rows, int64_t cols) {
  using v1::DType;
  using v1::Node;
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, rows);
  int x = g.Buffer(1, DType::FLOAT32, rows * cols);
  int i = g.Range(g.Index(rows), 0);
  int j = g.Range(g.Index(cols), 1, v1::RangeArg::REDUCE);
  int k = g.Range(g.Index(cols), 2, v1::RangeArg::REDUCE);
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(x, g.RowMajor(i, cols, k)), {k});
  int mean = g.Node(Node::MUL, DType::FLOAT32, {sum, g.Float(DType::FLOAT32, 1.0 / cols)});
  int d = g.Node(Node::ADD, DType::FLOAT32,
                 {g.Load(x, g.RowMajor(i, cols, j)),
                  g.Node(Node::MUL, DType::FLOAT32, {mean, g.Float(DType::FLOAT32, -1)})});
  int var = g.Reduce(Node::ADD, DType::FLOAT32, g.Node(Node::MUL, DType::FLOAT32, {d, d}), {j});
  return g.Sink({g.End(g.Store(g.Target(out, i), var), {i})});
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_GRAPH_BUILDER_H_
