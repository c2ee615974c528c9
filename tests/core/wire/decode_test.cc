// Decoding and encoding: every corpus AST round-trips through the wire form.
#include "core/wire/decode.h"

#include "core/ir/hash.h"
#include "core/ir/printer.h"
#include "core/wire/encode.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

TEST(DecodeGraph, EveryCorpusAstRoundTripsToTheSameHash) {
  auto asts = testing::CorpusAsts();
  ASSERT_GT(asts.size(), 300u) << "corpus missing from " << testing::CorpusDir();
  for (const auto& [label, wire] : asts) {
    Graph graph;
    auto decoded = DecodeGraph(wire, graph);
    ASSERT_TRUE(decoded.ok()) << label << ": " << decoded.status();
    std::string hash = AstHashHex(decoded->root);

    v1::Graph reencoded = EncodeGraph(decoded->root);
    // The corpus lists each distinct node once, in topological order: the round trip is exact.
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(wire, reencoded))
        << label << " re-encodes differently";

    Graph graph2;
    auto redecoded = DecodeGraph(reencoded, graph2);
    ASSERT_TRUE(redecoded.ok()) << label << ": " << redecoded.status();
    EXPECT_EQ(AstHashHex(redecoded->root), hash) << label;
  }
}

TEST(DecodeGraph, DuplicateWireNodesInternToOneNode) {
  v1::Graph wire = testing::GraphFromJson(R"({"nodes": [
    {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "INT32", "ptr": true, "size": 1}, "arg": {"i64": 0}},
    {"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": 0}},
    {"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": 0}},
    {"op": "INDEX", "dtype": {"scalar": "INT32", "ptr": true, "size": 1}, "src": [0, 1]},
    {"op": "CONST", "dtype": {"scalar": "INT32"}, "arg": {"i64": 7}},
    {"op": "STORE", "dtype": {"scalar": "VOID"}, "src": [3, 4]},
    {"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [5]}]})");
  Graph graph;
  auto decoded = DecodeGraph(wire, graph);
  UOPD_ASSERT_OK(decoded);
  EXPECT_EQ(graph.size(), 6u) << "the two equal CONSTs must be one node";
  EXPECT_EQ(EncodeGraph(decoded->root).nodes_size(), 6);
}

// A message names a node's first sources only: an ADD of 100,000 sources made a status message
// of half a megabyte (found by a review helper's probe).
TEST(DecodeGraph, AnErrorNamesANodesFirstSourcesOnly) {
  v1::Graph wire = testing::GraphFromJson(R"({"nodes": [
    {"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": 1}}]})");
  v1::Node* add = wire.add_nodes();
  add->set_op(v1::Node::ADD);
  add->mutable_dtype()->set_scalar(v1::DType::INDEX);
  for (int k = 0; k < 100'000; ++k) add->add_src(0);
  wire.add_nodes()->set_op(v1::Node::SINK);
  wire.mutable_nodes(2)->add_src(1);
  Graph graph;
  auto decoded = DecodeGraph(wire, graph);
  EXPECT_TRUE(testing::StatusIs(
      decoded, absl::StatusCode::kInvalidArgument,
      {"node 1 ADD index (src 0, 0, 0, 0, 0, 0, 0, 0, ... 100000 in all)", "got 100000"}));
  EXPECT_LT(decoded.status().message().size(), 300u);
}

TEST(PrintGraph, UsesTinygradVocabulary) {
  v1::Graph wire = testing::GraphFromJson(R"({"nodes": [
    {"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 4}, "arg": {"i64": 0}},
    {"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": 4}},
    {"op": "RANGE", "dtype": {"scalar": "INDEX"}, "src": [1], "arg": {"range": {"axis": [0], "type": "LOOP"}}},
    {"op": "INDEX", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 4}, "src": [0, 2]},
    {"op": "CONST", "dtype": {"scalar": "FLOAT32"}, "arg": {"f64": 1.5}},
    {"op": "STORE", "dtype": {"scalar": "VOID"}, "src": [3, 4]},
    {"op": "END", "dtype": {"scalar": "VOID"}, "src": [5, 2]},
    {"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [6], "arg": {"kernel": {"name": "fill"}}}]})");
  Graph graph;
  auto decoded = DecodeGraph(wire, graph);
  UOPD_ASSERT_OK(decoded);
  std::string text = PrintGraph(decoded->root);
  EXPECT_NE(text.find("%2 = UOp(Ops.RANGE, dtypes.index, arg=(0, AxisType.LOOP), src=(%1,))"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dtypes.float.ptr(4)"), std::string::npos) << text;
  EXPECT_NE(text.find("KernelInfo(name='fill')"), std::string::npos) << text;
}

}  // namespace
}  // namespace uopd
