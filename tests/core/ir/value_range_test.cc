// Value ranges: sound on every index expression of the corpus (checked by brute force over the
// loop and variable domains), and exact where interval arithmetic can be.
#include "core/ir/value_range.h"

#include <functional>

#include "core/ir/evaluate.h"
#include "core/ir/graph.h"
#include "core/ir/printer.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

// The DEFINE_VAR and RANGE leaves under `node`, sorted by id (sources first).
std::vector<const UOp*> Leaves(const UOp* node) {
  std::vector<const UOp*> leaves;
  for (const UOp* n : Toposort(node)) {
    if (n->op() == Op::kDefineVar || n->op() == Op::kRange) leaves.push_back(n);
  }
  return leaves;
}

// Calls `visit` for every feasible assignment of `leaves` (ranges below their evaluated end).
// Gives up (returns false) past `budget` assignments.
bool Enumerate(const std::vector<const UOp*>& leaves,
               const std::function<void(const absl::flat_hash_map<const UOp*, Int128>&)>& visit,
               int64_t budget) {
  absl::flat_hash_map<const UOp*, Int128> values;
  int64_t visited = 0;
  std::function<bool(size_t)> rec = [&](size_t i) -> bool {
    if (i == leaves.size()) {
      visit(values);
      return ++visited <= budget;
    }
    const UOp* leaf = leaves[i];
    Int128 lo, hi;
    if (leaf->op() == Op::kDefineVar) {
      lo = leaf->arg().var_min;
      hi = leaf->arg().var_max;
    } else {
      auto end = EvaluateInt(leaf->src(0), values);
      if (!end.ok()) return false;
      lo = 0;
      hi = *end - 1;
    }
    for (Int128 v = lo; v <= hi; ++v) {
      values[leaf] = v;
      if (!rec(i + 1)) return false;
    }
    values.erase(leaf);
    return true;
  };
  return rec(0);
}

TEST(ValueRanges, AreSoundOnCorpusIndexExpressions) {
  int checked = 0, exact = 0;
  for (const auto& [label, wire] : testing::CorpusAsts()) {
    Graph graph;
    auto decoded = DecodeGraph(wire, graph);
    ASSERT_TRUE(decoded.ok()) << label << decoded.status();
    ValueRanges ranges;
    for (const UOp* node : Toposort(decoded->root)) {
      if (node->dtype().scalar != Scalar::kIndex || node->dtype().ptr || node->IsInvalid())
        continue;
      if (node->op() == Op::kWhere) continue;  // may select Invalid: no value to check
      Interval bound = ranges.Get(node);
      Int128 seen_min = bound.max + 1, seen_max = bound.min - 1;
      bool complete = Enumerate(
          Leaves(node),
          [&](const absl::flat_hash_map<const UOp*, Int128>& values) {
            auto v = EvaluateInt(node, values);
            if (!v.ok()) return;
            seen_min = std::min(seen_min, *v);
            seen_max = std::max(seen_max, *v);
            EXPECT_TRUE(bound.Contains(*v))
                << label << ": " << DescribeNode(*node) << " took " << static_cast<int64_t>(*v)
                << " outside [" << static_cast<int64_t>(bound.min) << ", "
                << static_cast<int64_t>(bound.max) << "]";
          },
          200'000);
      if (!complete || seen_min > seen_max) continue;
      ++checked;
      if (seen_min == bound.min && seen_max == bound.max) ++exact;
    }
  }
  EXPECT_GT(checked, 1000);
  // Interval arithmetic is exact for sums of independent terms, which most index math is.
  EXPECT_GT(exact * 100, checked * 95) << exact << " exact of " << checked;
}

TEST(ValueRanges, WrapToTheDtypeWhenAnOperationMayOverflow) {
  Graph graph;
  const UOp* x =
      graph.Make(Op::kDefineVar, DType::Of(Scalar::kInt32), {}, Arg::Var("x", 0, 2'000'000'000));
  const UOp* doubled = graph.Make(Op::kAdd, DType::Of(Scalar::kInt32), {x, x});
  ValueRanges ranges;
  Interval r = ranges.Get(doubled);
  EXPECT_EQ(r.min, DTypeRange(Scalar::kInt32).min) << "x+x may wrap in int32";
  EXPECT_EQ(r.max, DTypeRange(Scalar::kInt32).max);
}

TEST(ValueRanges, ReadUnsignedConstantsModuloTheirWidth) {
  Graph graph;
  const UOp* c = graph.ConstInt(Scalar::kUint32, -3);
  ValueRanges ranges;
  EXPECT_EQ(ranges.Get(c).min, (Int128{1} << 32) - 3);
}

TEST(ValueRanges, ShiftsAsLongAsTheWidthShiftModuloIt) {
  // int32 x >> 40 runs as x >> 8 (shifts are modulo the width, docs/IR.md): it was read as
  // always 0, and an index built from it lost its bounds check (a daemon-killing write).
  Graph graph;
  const UOp* x =
      graph.Make(Op::kDefineVar, DType::Of(Scalar::kInt32), {}, Arg::Var("x", 0, 1 << 30));
  ValueRanges ranges;
  for (int64_t amount : {32, 40, 63}) {
    const UOp* shifted = graph.Make(Op::kShr, DType::Of(Scalar::kInt32),
                                    {x, graph.ConstInt(Scalar::kInt32, amount)});
    EXPECT_EQ(ranges.Get(shifted).max, DTypeRange(Scalar::kInt32).max) << amount;
  }
  const UOp* by8 =
      graph.Make(Op::kShr, DType::Of(Scalar::kInt32), {x, graph.ConstInt(Scalar::kInt32, 8)});
  EXPECT_EQ(ranges.Get(by8).max, (1 << 30) >> 8);
  // INDEX runs 32 or 64 bits wide: a shift of 32 or more is not read.
  const UOp* i = graph.Make(Op::kDefineVar, DType::Of(Scalar::kIndex), {}, Arg::Var("i", 0, 1000));
  const UOp* long_shift =
      graph.Make(Op::kShr, DType::Of(Scalar::kIndex), {i, graph.ConstInt(Scalar::kIndex, 40)});
  EXPECT_EQ(ranges.Get(long_shift).max, DTypeRange(Scalar::kIndex).max);
  const UOp* u8 = graph.Make(Op::kDefineVar, DType::Of(Scalar::kUint8), {}, Arg::Var("u", 0, 255));
  const UOp* u8_shift =
      graph.Make(Op::kShr, DType::Of(Scalar::kUint8), {u8, graph.ConstInt(Scalar::kUint8, 9)});
  EXPECT_EQ(ranges.Get(u8_shift).max, 255);
}

TEST(ValueRanges, HonourOverrides) {
  Graph graph;
  const UOp* end = graph.ConstInt(Scalar::kIndex, 10);
  const UOp* r =
      graph.Make(Op::kRange, DType::Of(Scalar::kIndex), {end}, Arg::Range({0}, AxisType::kLoop));
  const UOp* shifted =
      graph.Make(Op::kAdd, DType::Of(Scalar::kIndex), {r, graph.ConstInt(Scalar::kIndex, -2)});
  ValueRanges plain;
  EXPECT_EQ(plain.Get(shifted).min, -2);
  ValueRanges narrowed({{r, Interval{2, 9}}});
  EXPECT_EQ(narrowed.Get(shifted).min, 0);
  EXPECT_EQ(narrowed.Get(shifted).max, 7);
}

}  // namespace
}  // namespace uopd
