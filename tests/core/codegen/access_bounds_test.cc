// ProveInBounds through the lowering: an access proven in bounds gets no run-time check.
#include <string>

#include "core/codegen/pipeline.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using v1::DType;
using v1::Node;

// out[r * cols + k] = x[(a * 4 * cols + b * cols) + k + shift] for rows r = a * 4 + b of a
// padded grid (a < ceil(rows / 4), b < 4), guarded by `r < rows`: the index is `cols` times the
// guarded row written as other expressions of the same ranges (as a padded tensor core's A
// operand is). `x` holds `size` elements. Returns how many accesses the lowering checks.
int CheckedAccesses(int64_t rows, int64_t cols, int64_t size, int64_t shift = 0) {
  GraphBuilder g;
  const int64_t blocks = (rows + 3) / 4;
  int out = g.Buffer(0, DType::FLOAT32, blocks * 4 * cols);
  int x = g.Buffer(1, DType::FLOAT32, size);
  int a = g.Range(g.Index(blocks), 0);
  int b = g.Range(g.Index(4), 1);
  int k = g.Range(g.Index(cols), 2);
  auto mul = [&](int v, int64_t c) { return g.Node(Node::MUL, DType::INDEX, {v, g.Index(c)}); };
  auto add = [&](int u, int v) { return g.Node(Node::ADD, DType::INDEX, {u, v}); };
  int row = add(mul(a, 4), b);
  int valid = g.Node(Node::CMPLT, DType::BOOL, {row, g.Index(rows)});
  int index = add(add(add(mul(a, 4 * cols), mul(b, cols)), k), g.Index(shift));
  int guarded = g.Node(Node::WHERE, DType::INDEX, {valid, index, g.Invalid()});
  int value = g.Load(x, guarded);
  int out_index = add(mul(row, cols), k);
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, out_index), value), {a, b, k})}));
  EXPECT_TRUE(ast.ok()) << ast.status();
  if (!ast.ok()) return -1;
  auto kernel = LowerForTarget(*ast, "k", CodegenTarget::CpuLoops(), {});
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  return kernel.ok() ? kernel->program.guarded_accesses : -1;
}

TEST(AccessBounds, AGuardedRowBoundsAnIndexThatScalesItsRangesAlike) {
  EXPECT_EQ(CheckedAccesses(33, 17, 33 * 17), 0);
  EXPECT_EQ(CheckedAccesses(30, 5, 30 * 5), 0);
}

TEST(AccessBounds, AnIndexThatCanPassTheEndIsStillChecked) {
  // One element short, or the index one past: the last row's last element is out of bounds.
  EXPECT_EQ(CheckedAccesses(33, 17, 33 * 17 - 1), 1);
  EXPECT_EQ(CheckedAccesses(33, 17, 33 * 17, /*shift=*/1), 1);
  // Unguarded rows reach past the end: without the guard nothing bounds them.
  EXPECT_EQ(CheckedAccesses(36, 17, 33 * 17), 1);
}

}  // namespace
}  // namespace uopd
