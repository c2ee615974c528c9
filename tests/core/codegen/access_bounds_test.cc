// ProveInBounds through the lowering: an access proven in bounds gets no run-time check.
#include "core/codegen/access_bounds.h"

#include <limits>
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

TEST(AccessBounds, HugeTermsThatCancelGiveNoProof) {
  // idx = (w - 1) + (C - x) * M + (C - y) * M + (D - z) with x = y = C = 2^63 - 1, M = 2^61,
  // z = 2^62, D = 2^62 + 2^40: idx is 2^40 + w - 1, far past 10 elements. Its constant alone
  // (C * M twice, D, -1) is past 2^125: a saturating sum lost the excess, the atoms' terms
  // pulled it back, and the access was "proven" in bounds.
  Graph g;
  const uopd::DType index = uopd::DType::Of(Scalar::kIndex);
  const int64_t c = std::numeric_limits<int64_t>::max();
  auto var = [&](const char* name, int64_t lo, int64_t hi) {
    return g.Make(Op::kDefineVar, index, {}, Arg::Var(name, lo, hi));
  };
  auto k = [&](int64_t v) { return g.ConstInt(Scalar::kIndex, v); };
  auto op = [&](Op o, const UOp* a, const UOp* b) { return g.Make(o, index, {a, b}); };
  const UOp* x = var("x", c, c);
  const UOp* y = var("y", c, c);
  const UOp* z = var("z", int64_t{1} << 62, int64_t{1} << 62);
  const UOp* w = var("w", 1, 10);
  const UOp* idx = op(Op::kAdd, op(Op::kSub, w, k(1)),
                      op(Op::kAdd, op(Op::kMul, op(Op::kSub, k(c), x), k(int64_t{1} << 61)),
                         op(Op::kAdd, op(Op::kMul, op(Op::kSub, k(c), y), k(int64_t{1} << 61)),
                            op(Op::kSub, k((int64_t{1} << 62) + (int64_t{1} << 40)), z))));
  const UOp* valid = g.Make(Op::kCmplt, uopd::DType::Of(Scalar::kBool), {w, k(11)});
  ValueRanges ranges;
  EXPECT_FALSE(ProveInBounds(idx, {valid}, 10, ranges));
}

TEST(AccessBounds, AGuardWhoseArithmeticWrapsBoundsNothing) {
  // x * 2 < 10 with x up to 2^62: x = 2^62 wraps x * 2 to -2^63, which passes the guard, so
  // x is not bounded by it (it was narrowed to [0, 4] and x[0, 5) "proven").
  Graph g;
  const uopd::DType index = uopd::DType::Of(Scalar::kIndex);
  const UOp* x = g.Make(Op::kDefineVar, index, {}, Arg::Var("x", 0, int64_t{1} << 62));
  const UOp* twice = g.Make(Op::kMul, index, {x, g.ConstInt(Scalar::kIndex, 2)});
  const UOp* valid =
      g.Make(Op::kCmplt, uopd::DType::Of(Scalar::kBool), {twice, g.ConstInt(Scalar::kIndex, 10)});
  ValueRanges ranges;
  EXPECT_FALSE(ProveInBounds(x, {valid}, 5, ranges));
  // The guard's own value is what the guard bounds, wrapped or not.
  EXPECT_TRUE(ProveInBounds(twice,
                            {valid, g.Make(Op::kCmplt, uopd::DType::Of(Scalar::kBool),
                                           {g.ConstInt(Scalar::kIndex, -1), twice})},
                            10, ranges));
}

TEST(AccessBounds, AClientsGuardOnAWrappingProductKeepsItsLoadChecked) {
  // The same hole through the whole lowering, as a client's kernel reaches it: x[v] under
  // v * 2 < 10 with v up to 2^62 was proven in bounds (no check), so v = 2^62 read far past x.
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 1);
  int x = g.Buffer(1, DType::FLOAT32, 5);
  int v = g.Var("v", 0, int64_t{1} << 62);
  int twice = g.Node(Node::MUL, DType::INDEX, {v, g.Index(2)});
  int valid = g.Node(Node::CMPLT, DType::BOOL, {twice, g.Index(10)});
  int guarded = g.Node(Node::WHERE, DType::INDEX, {valid, v, g.Invalid()});
  auto ast = DecodeKernelAst(g.Sink({g.Store(g.Target(out, g.Index(0)), g.Load(x, guarded))}));
  UOPD_ASSERT_OK(ast);
  auto kernel = LowerForTarget(*ast, "k", CodegenTarget::CpuLoops(), {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->program.guarded_accesses, 1) << kernel->program.Dump();
}

TEST(AccessBounds, AnIndexShiftedPastItsWidthKeepsItsStoreChecked) {
  // out[int32(v) >> 40] for v up to 2^30: the shift runs as >> 8 (modulo the width) and was
  // read as always 0, so the store had no check; v = 2^30 wrote 2^22 elements past out and
  // killed the daemon (found by an adversarial helper).
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 4);
  int v = g.Var("v", 0, int64_t{1} << 30);
  int narrow = g.Node(Node::CAST, DType::INT32, {v});
  int shifted = g.Node(Node::SHR, DType::INT32, {narrow, g.Int(DType::INT32, 40)});
  int index = g.Node(Node::CAST, DType::INDEX, {shifted});
  auto ast = DecodeKernelAst(
      g.Sink({g.Store(g.Target(out, index), g.Float(DType::FLOAT32, 7))}, "shifted_store"));
  UOPD_ASSERT_OK(ast);
  auto kernel = LowerForTarget(*ast, "k", CodegenTarget::CpuLoops(), {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->program.guarded_accesses, 1) << kernel->program.Dump();
}

TEST(AccessBounds, AGuardWithHugeFactorsNeitherProvesNorCrashes) {
  // x * 8 * 2^62 * 2^62 < 10: the factors' product (2^127) overflowed 128 bits and made x's
  // narrowed range empty ("the access never happens"), though x = 0 passes the guard; with 16
  // the product wrapped to 0 and the division by it crashed the daemon (SIGFPE).
  for (int64_t factor : {8, 16}) {
    Graph g;
    const uopd::DType index = uopd::DType::Of(Scalar::kIndex);
    const UOp* x = g.Make(Op::kDefineVar, index, {}, Arg::Var("x", 0, 4));
    const UOp* y = g.Make(Op::kDefineVar, index, {}, Arg::Var("y", 0, 1000));
    auto times = [&](const UOp* a, int64_t c) {
      return g.Make(Op::kMul, index, {a, g.ConstInt(Scalar::kIndex, c)});
    };
    const UOp* product = times(times(times(x, factor), int64_t{1} << 62), int64_t{1} << 62);
    const UOp* valid = g.Make(Op::kCmplt, uopd::DType::Of(Scalar::kBool),
                              {product, g.ConstInt(Scalar::kIndex, 10)});
    ValueRanges ranges;
    EXPECT_FALSE(ProveInBounds(y, {valid}, 1, ranges)) << factor;
  }
}

}  // namespace
}  // namespace uopd
