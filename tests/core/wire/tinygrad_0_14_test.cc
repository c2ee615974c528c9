#include "core/wire/tinygrad_0_14.h"

#include <cmath>
#include <limits>

#include "core/ir/graph.h"
#include "core/ir/kernel_ast.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using testing::StatusIs;
using S = v1::DType::Scalar;

// tinygrad 0.14's spelling, built by hand as tinygrad 0.14 writes it (captured kernels:
// tests/corpus14).
class Graph014 {
 public:
  int WeakInt(int64_t v) { return g_.Int(v1::DType::WEAKINT, v); }
  int WeakFloat(double v) { return g_.Float(v1::DType::WEAKFLOAT, v); }
  int Param(int slot, S scalar, int shape) {
    int n = g_.Node(v1::Node::PARAM, scalar, {shape});
    g_.Mut(n)->mutable_arg()->mutable_param()->set_slot(slot);
    return n;
  }
  int Range(int end, int axis) {
    int n = g_.Range(end, axis, v1::RangeArg::WEAK);
    g_.Mut(n)->mutable_dtype()->set_scalar(v1::DType::WEAKINT);
    return n;
  }
  int Index(int buffer, int index, S scalar) {
    return g_.Node(v1::Node::INDEX, scalar, {buffer, index});
  }
  GraphBuilder& g() { return g_; }
  v1::Graph Sink(std::vector<int> stmts) {
    v1::Graph graph = g_.Sink(std::move(stmts));
    graph.set_dialect(v1::TINYGRAD_0_14);
    return graph;
  }

 private:
  GraphBuilder g_;
};

std::string HashOf(const v1::Graph& graph) {
  auto ast = DecodeKernelAst(graph);
  EXPECT_TRUE(ast.ok()) << ast.status();
  return ast.ok() ? (*ast)->hash : "";
}

TEST(Tinygrad014, AKernelHashesAsIts012SpellingDoes) {
  // out[i] = a[i] + 1.0, as 0.14 writes it (PARAM, WEAK range, weak literal)...
  Graph014 k;
  int four = k.WeakInt(4);
  int out = k.Param(0, v1::DType::FLOAT32, four);
  int r = k.Range(four, 0);
  int target = k.Index(out, r, v1::DType::FLOAT32);
  int in = k.Param(1, v1::DType::FLOAT32, four);
  int sum = k.g().Node(v1::Node::ADD, v1::DType::FLOAT32,
                       {k.Index(in, r, v1::DType::FLOAT32), k.WeakFloat(1.0)});
  int store = k.g().Store(target, sum);
  const v1::Graph v014 = k.Sink({k.g().End(store, {r})});
  // ...and as 0.12 did.
  GraphBuilder g;
  int out12 = g.Buffer(0, v1::DType::FLOAT32, 4);
  int r12 = g.Range(g.Index(4), 0);
  int in12 = g.Buffer(1, v1::DType::FLOAT32, 4);
  int sum12 = g.Node(v1::Node::ADD, v1::DType::FLOAT32,
                     {g.Load(in12, r12), g.Float(v1::DType::FLOAT32, 1.0)});
  const v1::Graph v012 = g.Sink({g.End(g.Store(g.Target(out12, r12), sum12), {r12})});
  EXPECT_EQ(HashOf(v014), HashOf(v012));
}

// out[i] = a[i] for i < n, n a variable in [1, 16] whose values are multiples of `multiple_of`.
v1::Graph CopyFirstN(int64_t multiple_of) {
  Graph014 k;
  int sixteen = k.WeakInt(16);
  int n = k.g().Node(v1::Node::PARAM, v1::DType::WEAKINT,
                     {k.g().Node(v1::Node::STACK, v1::DType::VOID)});
  v1::ParamArg* var = k.g().Mut(n)->mutable_arg()->mutable_param();
  var->set_slot(-1);
  var->set_name("n");
  var->set_has_bounds(true);
  var->set_min(1);
  var->set_max(16);
  var->set_multiple_of(multiple_of);
  var->set_is_value(true);
  int out = k.Param(0, v1::DType::FLOAT32, sixteen);
  int in = k.Param(1, v1::DType::FLOAT32, sixteen);
  int r = k.Range(n, 0);
  int store = k.g().Store(k.Index(out, r, v1::DType::FLOAT32), k.Index(in, r, v1::DType::FLOAT32));
  return k.Sink({k.g().End(store, {r})});
}

TEST(Tinygrad014, AVariablesMultipleIsPartOfItsMeaningOnlyWhenItSaysSomething) {
  auto ast = DecodeKernelAst(CopyFirstN(4));
  UOPD_ASSERT_OK(ast);
  const UOp* var = nullptr;
  for (const UOp* node : Toposort((*ast)->root)) {
    if (node->op() == Op::kDefineVar) var = node;
  }
  ASSERT_NE(var, nullptr);
  EXPECT_EQ(var->arg().var_multiple, 4);
  EXPECT_NE(HashOf(CopyFirstN(4)), HashOf(CopyFirstN(1)));  // fewer values: another kernel
  EXPECT_NE(HashOf(CopyFirstN(4)), HashOf(CopyFirstN(2)));
  EXPECT_EQ(HashOf(CopyFirstN(1)), HashOf(CopyFirstN(0)));  // "any value", spelled either way
}

TEST(Tinygrad014, OneIndexReadAndStoredThroughBecomesAValueAndATarget) {
  // a.assign(a + 1): the same INDEX is read and written.
  Graph014 k;
  int four = k.WeakInt(4);
  int a = k.Param(0, v1::DType::FLOAT32, four);
  int r = k.Range(four, 0);
  int at = k.Index(a, r, v1::DType::FLOAT32);
  int plus = k.g().Node(v1::Node::ADD, v1::DType::FLOAT32, {at, k.WeakFloat(1.0)});
  const v1::Graph v014 = k.Sink({k.g().End(k.g().Store(at, plus), {r})});
  absl::StatusOr<v1::Graph> v012 = TranslateTinygrad014(v014, 1000);
  ASSERT_TRUE(v012.ok()) << v012.status();
  int targets = 0, values = 0;
  for (const v1::Node& n : v012->nodes()) {
    if (n.op() != v1::Node::INDEX) continue;
    (n.dtype().ptr() ? targets : values) += 1;
  }
  EXPECT_EQ(targets, 1);
  EXPECT_EQ(values, 1);
  EXPECT_TRUE(DecodeKernelAst(v014).ok());
}

TEST(Tinygrad014, ALiteralTakesTheTypeItsConsumerGivesIt) {
  // x >> 9 on uint32: the shift's 9 is a uint32; the range's 4 stays an index.
  Graph014 k;
  int four = k.WeakInt(4);
  int out = k.Param(0, v1::DType::UINT32, four);
  int r = k.Range(four, 0);
  int shifted = k.g().Node(v1::Node::SHR, v1::DType::UINT32,
                           {k.Index(out, r, v1::DType::UINT32), k.WeakInt(9)});
  const v1::Graph v014 =
      k.Sink({k.g().End(k.g().Store(k.Index(out, r, v1::DType::UINT32), shifted), {r})});
  absl::StatusOr<v1::Graph> v012 = TranslateTinygrad014(v014, 1000);
  ASSERT_TRUE(v012.ok()) << v012.status();
  bool uint_nine = false, index_four = false;
  for (const v1::Node& n : v012->nodes()) {
    if (n.op() != v1::Node::CONST) continue;
    uint_nine |= n.dtype().scalar() == v1::DType::UINT32 && n.arg().i64() == 9;
    index_four |= n.dtype().scalar() == v1::DType::INDEX && n.arg().i64() == 4;
    EXPECT_NE(n.dtype().scalar(), v1::DType::WEAKINT);
  }
  EXPECT_TRUE(uint_nine);
  EXPECT_TRUE(index_four);
}

// The node limit holds for what a graph translates to, as it is made: a FLOORDIV becomes about
// a dozen nodes, and 100,000 of them took 240 MB before the translated graph was refused.
TEST(Tinygrad014, ATranslationOverTheNodeLimitStopsAsItPassesIt) {
  Graph014 k;
  int four = k.WeakInt(4);
  int out = k.Param(0, v1::DType::INT32, four);
  int r = k.Range(four, 0);
  int value = k.g().Node(v1::Node::CAST, v1::DType::INT32, {r});
  for (int i = 0; i < 200; ++i) {
    value = k.g().Node(v1::Node::FLOORDIV, v1::DType::INT32,
                       {value, k.g().Int(v1::DType::INT32, 2 + i % 3)});
  }
  const v1::Graph v014 =
      k.Sink({k.g().End(k.g().Store(k.Index(out, r, v1::DType::INT32), value), {r})});
  ASSERT_LT(v014.nodes_size(), 1000);
  UOPD_EXPECT_OK(TranslateTinygrad014(v014, 10'000).status());
  auto refused = TranslateTinygrad014(v014, 1000);
  EXPECT_TRUE(StatusIs(refused, absl::StatusCode::kInvalidArgument,
                       {"translation from the tinygrad 0.14 dialect", "over the limit of 1000"}));
}

TEST(Tinygrad014, TheDeviceAxisOfAShardedKernelIsTheDeviceNumberVariable) {
  // out[d*4 + i] = a[d*4 + i] * 2 on each of 2 devices, d the DEVICE range (Tensor.shard):
  // tinygrad binds it per device as _device_num, which the daemon refused before.
  Graph014 k;
  int eight = k.WeakInt(8);
  int out = k.Param(0, v1::DType::FLOAT32, eight);
  int in = k.Param(1, v1::DType::FLOAT32, eight);
  int d = k.Range(k.WeakInt(2), 1);
  k.g().Mut(d)->mutable_arg()->mutable_range()->set_type(v1::RangeArg::DEVICE);
  int i = k.Range(k.WeakInt(4), 0);
  int at = k.g().Node(v1::Node::ADD, v1::DType::WEAKINT,
                      {k.g().Node(v1::Node::MUL, v1::DType::WEAKINT, {d, k.WeakInt(4)}), i});
  int doubled = k.g().Node(v1::Node::MUL, v1::DType::FLOAT32,
                           {k.Index(in, at, v1::DType::FLOAT32), k.WeakFloat(2.0)});
  int store = k.g().Store(k.Index(out, at, v1::DType::FLOAT32), doubled);
  const v1::Graph sharded = k.Sink({k.g().End(store, {i, d})});
  absl::StatusOr<v1::Graph> v012 = TranslateTinygrad014(sharded, 1000);
  ASSERT_TRUE(v012.ok()) << v012.status();
  int vars = 0, ranges = 0;
  for (const v1::Node& n : v012->nodes()) {
    if (n.op() == v1::Node::RANGE) ++ranges;
    if (n.op() == v1::Node::END) EXPECT_EQ(n.src_size(), 2);  // the store and i
    if (n.op() != v1::Node::DEFINE_VAR) continue;
    ++vars;
    EXPECT_EQ(n.arg().var().name(), "_device_num");
    EXPECT_EQ(n.arg().var().min(), 0);
    EXPECT_EQ(n.arg().var().max(), 1);
  }
  EXPECT_EQ(vars, 1);
  EXPECT_EQ(ranges, 1);
  UOPD_EXPECT_OK(DecodeKernelAst(sharded));
}

TEST(Tinygrad014, WhatTheDialectCannotSayIsRefusedNamingTheNode) {
  // 0.12's words in a 0.14 graph.
  GraphBuilder g;
  g.Buffer(0, v1::DType::FLOAT32, 4);
  v1::Graph spelled_012 = g.Sink({});
  spelled_012.set_dialect(v1::TINYGRAD_0_14);
  EXPECT_TRUE(StatusIs(DecodeKernelAst(spelled_012), absl::StatusCode::kInvalidArgument,
                       {"nodes[0] (DEFINE_GLOBAL, tinygrad 0.14)", "PARAM"}));
  // A source that is not an earlier node.
  v1::Graph forward;
  forward.set_dialect(v1::TINYGRAD_0_14);
  forward.add_nodes()->set_op(v1::Node::SINK);
  forward.mutable_nodes(0)->add_src(3);
  EXPECT_TRUE(StatusIs(DecodeKernelAst(forward), absl::StatusCode::kInvalidArgument,
                       {"nodes[0]", "source 3 is not an earlier node"}));
  // A multi-device range whose end is not a number of devices.
  Graph014 k;
  int devices = k.g().Node(v1::Node::PARAM, v1::DType::WEAKINT,
                           {k.g().Node(v1::Node::STACK, v1::DType::VOID)});
  k.g().Mut(devices)->mutable_arg()->mutable_param()->set_slot(-1);
  int r = k.Range(devices, 0);
  k.g().Mut(r)->mutable_arg()->mutable_range()->set_type(v1::RangeArg::DEVICE);
  EXPECT_TRUE(StatusIs(DecodeKernelAst(k.Sink({r})), absl::StatusCode::kInvalidArgument,
                       {"nodes[2] (RANGE", "DEVICE range ends at a constant"}));
  // A REDUCE without the value it reduces (found by fuzzing: it read source 0 of an empty list,
  // a null dereference in the daemon).
  Graph014 empty;
  int sum = empty.g().Node(v1::Node::REDUCE, v1::DType::FLOAT32, {});
  empty.g().Mut(sum)->mutable_arg()->add_ints(0);
  EXPECT_TRUE(StatusIs(DecodeKernelAst(empty.Sink({sum})), absl::StatusCode::kInvalidArgument,
                       {"REDUCE", "source 0"}));
  // A comparison of one literal (its type was taken from a second source that is not there).
  Graph014 one;
  int lt = one.g().Node(v1::Node::CMPLT, v1::DType::BOOL, {one.WeakInt(1)});
  EXPECT_TRUE(
      StatusIs(DecodeKernelAst(one.Sink({lt})), absl::StatusCode::kInvalidArgument, {"CMPLT"}));
  // A float literal where an integer goes must be one, and within the integer's range (the
  // conversion of -inf or 1e300 was undefined behaviour).
  for (double v : {-std::numeric_limits<double>::infinity(), 1e300, std::nan(""), 0.5}) {
    Graph014 lit;
    int sum = lit.g().Node(v1::Node::ADD, v1::DType::INT32,
                           {lit.Param(0, v1::DType::INT32, lit.WeakInt(1)), lit.WeakFloat(v)});
    EXPECT_TRUE(StatusIs(DecodeKernelAst(lit.Sink({sum})), absl::StatusCode::kInvalidArgument,
                         {"float literal", "used as INT32"}))
        << v;
  }
  // And 0.14's words in a graph that says nothing (0.12).
  Graph014 p;
  p.Param(0, v1::DType::FLOAT32, p.WeakInt(4));
  v1::Graph unmarked = p.Sink({});
  unmarked.clear_dialect();
  EXPECT_FALSE(DecodeKernelAst(unmarked).ok());
}

}  // namespace
}  // namespace uopd
