// The AST hash: independent of wire order and duplicates, sensitive to every op, dtype, arg, edge.
#include "core/ir/hash.h"

#include <random>

#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

std::string HashOf(const v1::Graph& wire) {
  Graph graph;
  auto decoded = DecodeGraph(wire, graph);
  EXPECT_TRUE(decoded.ok()) << decoded.status();
  return decoded.ok() ? AstHashHex(decoded->root) : "";
}

// A random topological order of `wire` (root kept last), with sources renumbered.
v1::Graph Shuffle(const v1::Graph& wire, std::mt19937& rng) {
  const int n = wire.nodes_size();
  std::vector<std::vector<int>> users(n);
  std::vector<int> pending(n);
  for (int i = 0; i < n; ++i) {
    for (int s : wire.nodes(i).src()) users[s].push_back(i);
    pending[i] = wire.nodes(i).src_size();
  }
  std::vector<int> ready, order;
  for (int i = 0; i < n - 1; ++i)
    if (pending[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    size_t pick = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    int node = ready[pick];
    ready.erase(ready.begin() + pick);
    order.push_back(node);
    for (int u : users[node])
      if (--pending[u] == 0 && u != n - 1) ready.push_back(u);
  }
  order.push_back(n - 1);
  std::vector<int> position(n);
  for (int i = 0; i < n; ++i) position[order[i]] = i;
  v1::Graph out;
  for (int old : order) {
    v1::Node* node = out.add_nodes();
    *node = wire.nodes(old);
    for (int& s : *node->mutable_src()) s = position[s];
  }
  return out;
}

// Appends a copy of node `target` right after it and points its later users at the copy.
v1::Graph WithDuplicate(const v1::Graph& wire, int target) {
  v1::Graph out;
  for (int i = 0; i < wire.nodes_size(); ++i) {
    v1::Node* node = out.add_nodes();
    *node = wire.nodes(i);
    for (int& s : *node->mutable_src()) {
      if (s > target)
        ++s;
      else if (s == target && i > target + 1 && i % 2 == 0)
        s = target + 1;
    }
    if (i == target) *out.add_nodes() = wire.nodes(i);
  }
  return out;
}

TEST(AstHash, IgnoresWireOrderAndDuplicates) {
  std::mt19937 rng(1234);
  auto asts = testing::CorpusAsts();
  ASSERT_FALSE(asts.empty());
  for (const auto& [label, wire] : asts) {
    std::string hash = HashOf(wire);
    EXPECT_EQ(HashOf(Shuffle(wire, rng)), hash) << label << " shuffled";
    int target = static_cast<int>(rng() % (wire.nodes_size() - 1));
    EXPECT_EQ(HashOf(WithDuplicate(wire, target)), hash) << label << " duplicated " << target;
  }
}

// out[i] = a[i] * 2.0 + b[i], i < 16: small enough to mutate by hand.
constexpr char kAxpy[] = R"({"nodes": [
  {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 16}, "arg": {"i64": 0}},
  {"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": 16}},
  {"op": "RANGE", "dtype": {"scalar": "INDEX"}, "src": [1], "arg": {"range": {"axis": [0], "type": "LOOP"}}},
  {"op": "INDEX", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 16}, "src": [0, 2]},
  {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 16}, "arg": {"i64": 1}},
  {"op": "INDEX", "dtype": {"scalar": "FLOAT32"}, "src": [4, 2]},
  {"op": "CONST", "dtype": {"scalar": "FLOAT32"}, "arg": {"f64": 2.0}},
  {"op": "MUL", "dtype": {"scalar": "FLOAT32"}, "src": [5, 6]},
  {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 16}, "arg": {"i64": 2}},
  {"op": "INDEX", "dtype": {"scalar": "FLOAT32"}, "src": [8, 2]},
  {"op": "ADD", "dtype": {"scalar": "FLOAT32"}, "src": [7, 9]},
  {"op": "STORE", "dtype": {"scalar": "VOID"}, "src": [3, 10]},
  {"op": "END", "dtype": {"scalar": "VOID"}, "src": [11, 2]},
  {"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [12], "arg": {"kernel": {"name": "axpy"}}}]})";

TEST(AstHash, ChangesWithEveryOpDtypeArgAndEdge) {
  const v1::Graph base = testing::GraphFromJson(kAxpy);
  const std::string hash = HashOf(base);
  EXPECT_EQ(hash.size(), 64u);

  v1::Graph op = base;
  op.mutable_nodes(10)->set_op(v1::Node::MUL);
  EXPECT_NE(HashOf(op), hash) << "op ADD -> MUL";

  v1::Graph arg = base;
  arg.mutable_nodes(6)->mutable_arg()->set_f64(3.0);
  EXPECT_NE(HashOf(arg), hash) << "arg 2.0 -> 3.0";

  v1::Graph axis = base;
  axis.mutable_nodes(2)->mutable_arg()->mutable_range()->set_type(v1::RangeArg::REDUCE);
  EXPECT_NE(HashOf(axis), hash) << "axis type";

  v1::Graph dtype = base;
  for (int i : {0, 3}) dtype.mutable_nodes(i)->mutable_dtype()->set_size(32);
  EXPECT_NE(HashOf(dtype), hash) << "buffer size 16 -> 32";

  v1::Graph edge = base;
  edge.mutable_nodes(10)->set_src(0, 9);
  edge.mutable_nodes(10)->set_src(1, 7);
  EXPECT_NE(HashOf(edge), hash) << "ADD operands swapped";

  v1::Graph renamed = base;
  renamed.mutable_nodes(13)->mutable_arg()->mutable_kernel()->set_name("other");
  EXPECT_EQ(HashOf(renamed), hash) << "the kernel name is metadata";
}

}  // namespace
}  // namespace uopd
