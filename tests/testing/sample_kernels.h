// Hand-made kernels shared by tests and benchmarks.
#ifndef UOPD_TESTS_TESTING_SAMPLE_KERNELS_H_
#define UOPD_TESTS_TESTING_SAMPLE_KERNELS_H_

#include <string>
#include <vector>

#include "tests/testing/graph_builder.h"

namespace uopd::testing {

// out[i] = sum over j of in[i * cols + j], accumulated in a register array as tinygrad 0.14's
// custom slice_sum_kernel does: reg.after(i)[0] = 0; reg[0] = reg.after(j)[0] + x, end=j;
// out[i] = reg[0]. Slots out (rows), in (rows x cols).
inline v1::Graph RegisterRowSumKernel(int64_t rows, int64_t cols) {
  using S = v1::DType;
  GraphBuilder g;
  int out = g.Buffer(0, S::FLOAT32, rows);
  int in = g.Buffer(1, S::FLOAT32, rows * cols);
  int reg = g.Registers(0, S::FLOAT32, 1);
  int i = g.Range(g.Index(rows), 0);
  int zeroed = g.Store(g.Target(g.After(reg, {i}), g.Index(0)), g.Float(S::FLOAT32, 0));
  int acc = g.After(reg, {zeroed});
  int j = g.Range(g.Index(cols), 1, v1::RangeArg::REDUCE);
  int sum = g.Node(v1::Node::ADD, S::FLOAT32,
                   {g.Load(g.After(acc, {j}), g.Index(0)), g.Load(in, g.RowMajor(i, cols, j))});
  int summed = g.After(acc, {g.End(g.Store(g.Target(acc, g.Index(0)), sum), {j})});
  int stored = g.Store(g.Target(out, i), g.Load(summed, g.Index(0)));
  return g.Sink({g.End(stored, {i})}, "register_row_sum");
}

// out[i, c] = sum over j of (sum over k of q[i, k] * kk[j, k]) * v[j, c]: tinygrad 0.14's custom
// simple_qkv_kernel (attention without softmax), two register arrays. The inner one is reset for
// every j, inside the loop over c, which the reset does not depend on (tinygrad places a
// statement in the loop of the innermost range it depends on). Slots out, q, kk, v (n x d each).
inline v1::Graph RegisterAttentionKernel(int64_t n, int64_t d) {
  using S = v1::DType;
  GraphBuilder g;
  int out = g.Buffer(0, S::FLOAT32, n * d);
  int q = g.Buffer(1, S::FLOAT32, n * d);
  int kk = g.Buffer(2, S::FLOAT32, n * d);
  int v = g.Buffer(3, S::FLOAT32, n * d);
  int i = g.Range(g.Index(n), 0);
  int c = g.Range(g.Index(d), 1);
  int j = g.Range(g.Index(n), 2, v1::RangeArg::REDUCE);
  int k = g.Range(g.Index(d), 3, v1::RangeArg::REDUCE);
  int zero = g.Float(S::FLOAT32, 0);
  int qk = g.Registers(0, S::FLOAT32, 1);
  int qk_zeroed = g.After(qk, {g.Store(g.Target(g.After(qk, {i, j}), g.Index(0)), zero)});
  int product = g.Node(v1::Node::MUL, S::FLOAT32,
                       {g.Load(q, g.RowMajor(i, d, k)), g.Load(kk, g.RowMajor(j, d, k))});
  int qk_sum =
      g.Node(v1::Node::ADD, S::FLOAT32, {g.Load(g.After(qk_zeroed, {k}), g.Index(0)), product});
  int qk_done = g.After(qk_zeroed, {g.End(g.Store(g.Target(qk_zeroed, g.Index(0)), qk_sum), {k})});
  int acc = g.Registers(1, S::FLOAT32, 1);
  int acc_zeroed = g.After(acc, {g.Store(g.Target(g.After(acc, {i, c}), g.Index(0)), zero)});
  int weighted = g.Node(v1::Node::MUL, S::FLOAT32,
                        {g.Load(qk_done, g.Index(0)), g.Load(v, g.RowMajor(j, d, c))});
  int acc_sum =
      g.Node(v1::Node::ADD, S::FLOAT32, {g.Load(g.After(acc_zeroed, {j}), g.Index(0)), weighted});
  int acc_done =
      g.After(acc_zeroed, {g.End(g.Store(g.Target(acc_zeroed, g.Index(0)), acc_sum), {j})});
  int stored = g.Store(g.Target(out, g.RowMajor(i, d, c)), g.Load(acc_done, g.Index(0)));
  return g.Sink({g.End(stored, {i, c})}, "register_attention");
}

// out[i] = a[i] + b[i] over n float32 elements; slots out, a, b.
inline v1::Graph AddKernel(int64_t n) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, n);
  int r = g.Range(g.Index(n), 0);
  int a = g.Buffer(1, v1::DType::FLOAT32, n);
  int b = g.Buffer(2, v1::DType::FLOAT32, n);
  int sum = g.Node(v1::Node::ADD, v1::DType::FLOAT32, {g.Load(a, r), g.Load(b, r)});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})}, "E_add");
}

// out[i] = in[i] * factor over n float32; slots out, in. `factor` makes a kernel no cache has
// seen.
inline v1::Graph ScaleKernel(int64_t n, double factor) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, n);
  int r = g.Range(g.Index(n), 0);
  int in = g.Buffer(1, v1::DType::FLOAT32, n);
  int value = g.Node(v1::Node::MUL, v1::DType::FLOAT32,
                     {g.Load(in, r), g.Float(v1::DType::FLOAT32, factor)});
  return g.Sink({g.End(g.Store(g.Target(out, r), value), {r})}, "scale");
}

// out[i] = table[idx[i]] for 4 outputs from an 8-element float32 table, through loaded indices
// no proof can bound (so checked at run time); slots out, table, idx.
inline v1::Graph GatherKernel(v1::DType::Scalar index_dtype = v1::DType::INT32) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, 4);
  int r = g.Range(g.Index(4), 0);
  int table = g.Buffer(1, v1::DType::FLOAT32, 8);
  int idx = g.Buffer(2, index_dtype, 4);
  return g.Sink({g.End(g.Store(g.Target(out, r), g.Load(table, g.Load(idx, r))), {r})}, "gather");
}

// out[r] = sum_k in[r * cols + k] over a rows x cols float32 matrix; slots out, in.
inline v1::Graph RowSumKernel(int64_t rows, int64_t cols) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, rows);
  int r = g.Range(g.Index(rows), 0);
  int in = g.Buffer(1, v1::DType::FLOAT32, rows * cols);
  int k = g.Range(g.Index(cols), 1, v1::RangeArg::REDUCE);
  int idx = g.RowMajor(r, cols, k);
  int sum = g.Reduce(v1::Node::ADD, v1::DType::FLOAT32, g.Load(in, idx), {k});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})}, "r_rowsum");
}

// out[c] = sum_k in[k * cols + c] over a rows x cols float32 matrix; slots out, in.
inline v1::Graph ColumnSumKernel(int64_t rows, int64_t cols) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, cols);
  int c = g.Range(g.Index(cols), 0);
  int in = g.Buffer(1, v1::DType::FLOAT32, rows * cols);
  int k = g.Range(g.Index(rows), 1, v1::RangeArg::REDUCE);
  int idx = g.RowMajor(k, cols, c);
  int sum = g.Reduce(v1::Node::ADD, v1::DType::FLOAT32, g.Load(in, idx), {k});
  return g.Sink({g.End(g.Store(g.Target(out, c), sum), {c})}, "r_colsum");
}

// out[r] = sum over the reduction ranges (of `extents`) of in[(k0 + k1 + ...) % 4], for r < rows:
// as much work as the extents multiply to, over 16 bytes of input.
inline v1::Graph ModSumKernel(int64_t rows, const std::vector<int64_t>& extents) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::INT32, rows);
  int r = g.Range(g.Index(rows), 0);
  int in = g.Buffer(1, v1::DType::INT32, 4);
  std::vector<int> ranges;
  int sum = g.Index(0);
  for (size_t i = 0; i < extents.size(); ++i) {
    ranges.push_back(g.Range(g.Index(extents[i]), static_cast<int>(i) + 1, v1::RangeArg::REDUCE));
    sum = g.Node(v1::Node::ADD, v1::DType::INDEX, {sum, ranges.back()});
  }
  int value = g.Load(in, g.Node(v1::Node::MOD, v1::DType::INDEX, {sum, g.Index(4)}));
  int total = g.Reduce(v1::Node::ADD, v1::DType::INT32, value, ranges);
  return g.Sink({g.End(g.Store(g.Target(out, r), total), {r})}, "r_mod_sum");
}

// out[i] = sum over t < terms of in[i] * c_t + d_t, with distinct constants, summed as a balanced
// tree: about 4 * terms nodes of straight-line code that takes LLVM seconds to optimize.
inline v1::Graph HeavyKernel(int64_t n, int terms) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, n);
  int r = g.Range(g.Index(n), 0);
  int in = g.Buffer(1, v1::DType::FLOAT32, n);
  int x = g.Load(in, r);
  std::vector<int> level;
  for (int t = 0; t < terms; ++t) {
    int product =
        g.Node(v1::Node::MUL, v1::DType::FLOAT32, {x, g.Float(v1::DType::FLOAT32, 1.0 + t * 1e-3)});
    level.push_back(g.Node(v1::Node::ADD, v1::DType::FLOAT32,
                           {product, g.Float(v1::DType::FLOAT32, t * 1e-2)}));
  }
  while (level.size() > 1) {
    std::vector<int> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      next.push_back(g.Node(v1::Node::ADD, v1::DType::FLOAT32, {level[i], level[i + 1]}));
    }
    if (level.size() % 2 == 1) next.push_back(level.back());
    level = std::move(next);
  }
  return g.Sink({g.End(g.Store(g.Target(out, r), level[0]), {r})}, "heavy");
}

// Row-wise normalizations over a rows x cols float32 matrix x, as tinygrad schedules them:
// reductions per row, then an elementwise pass that reads them back. `per_row(g, x, r)` builds
// each element's value from its x and row (it may add buffers from slot 2 on).
template <typename PerRow>
v1::Graph RowReduceKernel(int64_t rows, int64_t cols, v1::Node::Op op, const std::string& name,
                          PerRow per_row) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, rows);
  int r = g.Range(g.Index(rows), 0);
  int x = g.Buffer(1, v1::DType::FLOAT32, rows * cols);
  int k = g.Range(g.Index(cols), 1, v1::RangeArg::REDUCE);
  int value = per_row(g, g.Load(x, g.RowMajor(r, cols, k)), r);
  int reduced = g.Reduce(op, v1::DType::FLOAT32, value, {k});
  return g.Sink({g.End(g.Store(g.Target(out, r), reduced), {r})}, name);
}
template <typename PerRow>
v1::Graph RowMapKernel(int64_t rows, int64_t cols, const std::string& name, PerRow per_row) {
  GraphBuilder g;
  int out = g.Buffer(0, v1::DType::FLOAT32, rows * cols);
  int r = g.Range(g.Index(rows), 0);
  int c = g.Range(g.Index(cols), 1);
  int x = g.Buffer(1, v1::DType::FLOAT32, rows * cols);
  int value = per_row(g, g.Load(x, g.RowMajor(r, cols, c)), r);
  return g.Sink({g.End(g.Store(g.Target(out, g.RowMajor(r, cols, c)), value), {r, c})}, name);
}

// Softmax of each row: m = max(x); s = sum(exp(x - m)); out = exp(x - m) / s, three kernels
// with slots (m, x), (s, x, m), (out, x, m, s).
inline std::vector<v1::Graph> SoftmaxKernels(int64_t rows, int64_t cols) {
  constexpr auto f32 = v1::DType::FLOAT32;
  auto shifted_exp = [rows](GraphBuilder& g, int x, int r) {
    int m = g.Load(g.Buffer(2, f32, rows), r);
    int scaled = g.Node(v1::Node::MUL, f32,
                        {g.Node(v1::Node::SUB, f32, {x, m}), g.Float(f32, 1.4426950408889634)});
    return g.Node(v1::Node::EXP2, f32, {scaled});
  };
  return {RowReduceKernel(rows, cols, v1::Node::MAX, "r_softmax_max",
                          [](GraphBuilder&, int x, int) { return x; }),
          RowReduceKernel(rows, cols, v1::Node::ADD, "r_softmax_sum", shifted_exp),
          RowMapKernel(rows, cols, "E_softmax", [&](GraphBuilder& g, int x, int r) {
            int s = g.Load(g.Buffer(3, f32, rows), r);
            return g.Node(v1::Node::MUL, f32,
                          {shifted_exp(g, x, r), g.Node(v1::Node::RECIPROCAL, f32, {s})});
          })};
}

// Layer normalization of each row (no affine): mean; variance = mean((x - mean)^2); out =
// (x - mean) / sqrt(variance + 1e-5), three kernels with slots (mean, x), (var, x, mean),
// (out, x, mean, var).
inline std::vector<v1::Graph> LayerNormKernels(int64_t rows, int64_t cols) {
  constexpr auto f32 = v1::DType::FLOAT32;
  const double inv = 1.0 / static_cast<double>(cols);
  auto centered = [rows](GraphBuilder& g, int x, int r) {
    return g.Node(v1::Node::SUB, f32, {x, g.Load(g.Buffer(2, f32, rows), r)});
  };
  return {RowReduceKernel(rows, cols, v1::Node::ADD, "r_layernorm_mean",
                          [inv](GraphBuilder& g, int x, int) {
                            return g.Node(v1::Node::MUL, f32, {x, g.Float(f32, inv)});
                          }),
          RowReduceKernel(rows, cols, v1::Node::ADD, "r_layernorm_var",
                          [&](GraphBuilder& g, int x, int r) {
                            int d = centered(g, x, r);
                            return g.Node(v1::Node::MUL, f32,
                                          {g.Node(v1::Node::MUL, f32, {d, d}), g.Float(f32, inv)});
                          }),
          RowMapKernel(rows, cols, "E_layernorm", [&](GraphBuilder& g, int x, int r) {
            int var = g.Load(g.Buffer(3, f32, rows), r);
            int denom = g.Node(v1::Node::SQRT, f32,
                               {g.Node(v1::Node::ADD, f32, {var, g.Float(f32, 1e-5)})});
            return g.Node(v1::Node::MUL, f32,
                          {centered(g, x, r), g.Node(v1::Node::RECIPROCAL, f32, {denom})});
          })};
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_SAMPLE_KERNELS_H_
