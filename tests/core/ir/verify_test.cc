// One test per validation rule of IR.md: each hand-made bad graph is rejected with the right code
// and a message naming the node and the rule.
#include "core/ir/verify.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::StatusIs;
using Code = absl::StatusCode;

absl::Status Decode(const std::vector<std::string>& nodes, const IrLimits& limits = {}) {
  v1::Graph wire =
      testing::GraphFromJson(absl::StrCat(R"({"nodes": [)", absl::StrJoin(nodes, ","), "]}"));
  Graph graph;
  return DecodeGraph(wire, graph, limits).status();
}

const std::string kBuf0 =
    R"({"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 8}, "arg": {"i64": 0}})";
const std::string kIdx0 = R"({"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": 0}})";

std::string Sink(int src) {
  return absl::StrCat(R"({"op": "SINK", "dtype": {"scalar": "VOID"}, "src": [)", src, "]}");
}
std::string Node(absl::string_view op, absl::string_view scalar, absl::string_view src = "",
                 absl::string_view arg = "") {
  std::string out = absl::StrCat(R"({"op": ")", op, R"(", "dtype": {"scalar": ")", scalar, "\"}");
  if (!src.empty()) absl::StrAppend(&out, R"(, "src": [)", src, "]");
  if (!arg.empty()) absl::StrAppend(&out, R"(, "arg": )", arg);
  return out + "}";
}
// A valid kernel storing `value_node` (appended at index 3) into buf0[0].
std::vector<std::string> StoreOf(std::vector<std::string> value_nodes) {
  std::vector<std::string> nodes = {
      kBuf0, kIdx0,
      R"({"op": "INDEX", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 8}, "src": [0, 1]})"};
  for (auto& n : value_nodes) nodes.push_back(n);
  int value = static_cast<int>(nodes.size()) - 1;
  nodes.push_back(Node("STORE", "VOID", absl::StrCat("2, ", value)));
  nodes.push_back(Sink(value + 1));
  return nodes;
}

TEST(Validate, AcceptsAWellFormedKernel) {
  UOPD_EXPECT_OK(Decode(StoreOf({Node("CONST", "FLOAT32", "", R"({"f64": 1.0})")})));
}

TEST(Validate, RejectsUnknownOp) {
  auto status = Decode({kBuf0, R"({"op": 99, "dtype": {"scalar": "VOID"}})", Sink(1)});
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"node 1", "unknown op 99"}));
}

TEST(Validate, RejectsMissingOp) {
  auto status = Decode({R"({"dtype": {"scalar": "VOID"}})"});
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"node 0", "op is missing"}));
}

TEST(Validate, RejectsUnknownDtype) {
  auto status = Decode(StoreOf({R"({"op": "CONST", "dtype": {"scalar": 77}, "arg": {"f64": 1}})"}));
  EXPECT_TRUE(
      StatusIs(status, Code::kInvalidArgument, {"node 3 CONST", "unknown dtype scalar 77"}));
}

// 18 and 19 (WEAKINT, WEAKFLOAT) lie between FLOAT64 and the fnuz fp8 types: only the 0.14
// dialect's translation resolves them; the IR has no such scalars.
TEST(Validate, RejectsTheWeakTypesOutsideThe014Dialect) {
  auto status = Decode(StoreOf({R"({"op": "CONST", "dtype": {"scalar": 18}, "arg": {"f64": 1}})"}));
  EXPECT_TRUE(
      StatusIs(status, Code::kInvalidArgument, {"node 3 CONST", "unknown dtype scalar 18"}));
  UOPD_EXPECT_OK(Decode(StoreOf(
      {Node("CONST", "FP8E5M2FNUZ", "", R"({"f64": 1.0})"), Node("CAST", "FLOAT32", "3")})));
}

TEST(Validate, RejectsSourceThatIsNotEarlier) {
  auto status = Decode({kBuf0, kIdx0, Node("ADD", "INDEX", "1, 2"), Sink(2)});
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument,
                       {"node 2 ADD", "source index 2 is not an earlier node"}));
  auto negative = Decode({kBuf0, kIdx0, Node("ADD", "INDEX", "1, -1"), Sink(2)});
  EXPECT_TRUE(StatusIs(negative, Code::kInvalidArgument, {"node 2 ADD", "source index -1"}));
}

TEST(Validate, RejectsWrongSourceCount) {
  auto status = Decode(
      StoreOf({Node("CONST", "FLOAT32", "", R"({"f64": 1.0})"), Node("ADD", "FLOAT32", "3")}));
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"node 4 ADD", "expects 2 sources, got 1"}));
}

TEST(Validate, RejectsOperandDtypeMismatch) {
  auto status = Decode(
      StoreOf({Node("CONST", "FLOAT32", "", R"({"f64": 1.0})"),
               Node("CONST", "INT32", "", R"({"i64": 1})"), Node("ADD", "FLOAT32", "3, 4")}));
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"node 5 ADD", "operand dtypes differ"}));
}

TEST(Validate, RejectsStoreOfWrongDtype) {
  auto status = Decode(StoreOf({Node("CONST", "INT32", "", R"({"i64": 1})")}));
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"node 4 STORE", "stores int32"}));
}

TEST(Validate, RejectsSlotWithTwoDtypes) {
  auto status = Decode(
      {kBuf0,
       R"({"op": "DEFINE_GLOBAL", "dtype": {"scalar": "INT32", "ptr": true, "size": 8}, "arg": {"i64": 0}})",
       Sink(1)});
  EXPECT_TRUE(
      StatusIs(status, Code::kInvalidArgument,
               {"node 1 DEFINE_GLOBAL", "slot 0 is also defined as float32*[8] by node 0"}));
}

TEST(Validate, RejectsRangeWithNonIntegerEnd) {
  auto status =
      Decode({Node("CONST", "FLOAT32", "", R"({"f64": 4.0})"),
              Node("RANGE", "INDEX", "0", R"({"range": {"axis": [0], "type": "LOOP"}})"), Sink(1)});
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"node 1 RANGE", "end must be an integer"}));
}

TEST(Validate, RejectsVariableWithMinAboveMax) {
  auto status = Decode(
      {Node("DEFINE_VAR", "INDEX", "", R"({"var": {"name": "n", "min": 5, "max": 2}})"), Sink(0)});
  EXPECT_TRUE(
      StatusIs(status, Code::kInvalidArgument, {"node 0 DEFINE_VAR", "'n' has min 5 > max 2"}));
}

TEST(Validate, RejectsRootThatIsNotSink) {
  auto status = Decode({kBuf0, kIdx0});
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument,
                       {"node 1 CONST", "root (last node) must be a SINK"}));
}

TEST(Validate, RejectsGraphOverNodeLimit) {
  IrLimits limits;
  limits.max_nodes = 4;
  auto status = Decode(StoreOf({Node("CONST", "FLOAT32", "", R"({"f64": 1.0})")}), limits);
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"6 nodes, over the limit of 4"}));
}

TEST(Validate, RejectsPostLoweringOpsAsUnimplemented) {
  auto status = Decode({Node("SPECIAL", "INDEX", "", R"({"str": "gidx0"})"), Sink(0)});
  EXPECT_TRUE(StatusIs(status, Code::kUnimplemented, {"node 0 SPECIAL", "only after lowering"}));
}

TEST(Validate, RejectsVectorDtypesAsUnimplemented) {
  auto status = Decode(StoreOf(
      {R"({"op": "CONST", "dtype": {"scalar": "FLOAT32", "count": 4}, "arg": {"f64": 1}})"}));
  EXPECT_TRUE(StatusIs(status, Code::kUnimplemented, {"node 3 CONST", "vector dtype float32x4"}));
}

TEST(Validate, RejectsConstantWithMismatchedArgument) {
  auto status = Decode(StoreOf({Node("CONST", "FLOAT32", "", R"({"b": true})")}));
  EXPECT_TRUE(StatusIs(status, Code::kInvalidArgument, {"node 3 CONST", "needs an f64 argument"}));
}

// A scalar constant with a list of values beside its value: the bounds proofs read arg.i, the
// code arg.ints, so INDEX(buf, CONST {i64: 0, ints: [1000]}) was proven and wrote element 1000
// (a review helper's finding). Other arguments take no stray ints either.
TEST(Validate, RejectsAScalarConstantWithIntsAndStrayIntsBesideAnArgument) {
  std::vector<std::string> nodes = {
      kBuf0,
      R"({"op": "CONST", "dtype": {"scalar": "INDEX"}, "arg": {"i64": 0, "ints": [1000]}})",
      R"({"op": "INDEX", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 8}, "src": [0, 1]})",
      Node("CONST", "FLOAT32", "", R"({"f64": 1.0})"),
      Node("STORE", "VOID", "2, 3"),
      Sink(4)};
  EXPECT_TRUE(StatusIs(Decode(nodes), Code::kInvalidArgument,
                       {"node 1 CONST", "cannot have 1 values in ints"}));
  nodes[3] = Node("CONST", "FLOAT32", "", R"({"f64": 1.0, "ints": [2]})");
  nodes[1] = kIdx0;
  EXPECT_TRUE(StatusIs(Decode(nodes), Code::kInvalidArgument, {"node 3 CONST", "in ints"}));
  nodes[0] = R"({"op": "DEFINE_GLOBAL", "dtype": {"scalar": "FLOAT32", "ptr": true, "size": 8},
                 "arg": {"i64": 0, "ints": [1]}})";
  nodes[3] = Node("CONST", "FLOAT32", "", R"({"f64": 1.0})");
  EXPECT_TRUE(StatusIs(Decode(nodes), Code::kInvalidArgument, {"node 0 DEFINE_GLOBAL", "no ints"}));
}

// A RANGE is an integer (tinygrad's UOp.range(n, dtype=dtypes.int) is an int32 one; whether its
// dtype holds its counter is the lowering's check), never a float or a vector.
TEST(Validate, RejectsARangeThatIsNotAnInteger) {
  for (const char* scalar : {"FLOAT32", "BOOL"}) {
    auto status = Decode({kBuf0, kIdx0, Node("CONST", "INDEX", "", R"({"i64": 4})"),
                          Node("RANGE", scalar, "2", R"({"range": {"axis": [0], "type": "LOOP"}})"),
                          Sink(3)});
    EXPECT_TRUE(
        StatusIs(status, Code::kInvalidArgument, {"node 3 RANGE", "needs an integer dtype"}))
        << scalar << ": " << status;
  }
}

TEST(Validate, RejectsIndexIntoANonPointer) {
  auto status = Decode({kIdx0, Node("INDEX", "FLOAT32", "0, 0"), Sink(1)});
  EXPECT_TRUE(
      StatusIs(status, Code::kInvalidArgument, {"node 1 INDEX", "must be a buffer pointer"}));
}

TEST(Validate, RejectsReduceWithUnsupportedOp) {
  auto status =
      Decode({Node("CONST", "FLOAT32", "", R"({"f64": 1.0})"), kIdx0,
              Node("RANGE", "INDEX", "1", R"({"range": {"axis": [0], "type": "REDUCE"}})"),
              Node("REDUCE", "FLOAT32", "0, 2", R"({"op": "SUB"})"), Sink(3)});
  EXPECT_TRUE(
      StatusIs(status, Code::kInvalidArgument, {"node 3 REDUCE", "must be ADD, MUL or MAX"}));
}

TEST(Validate, RejectsBufferOverElementLimit) {
  IrLimits limits;
  limits.max_buffer_elements = 4;
  auto status = Decode({kBuf0, Sink(0)}, limits);
  EXPECT_TRUE(
      StatusIs(status, Code::kInvalidArgument, {"node 0 DEFINE_GLOBAL", "exceeds the limit of 4"}));
}

// A chain of `depth` NEGs over one constant, built on the wire directly (JSON would be slow).
v1::Graph DeepChain(int depth) {
  v1::Graph wire;
  v1::Node* leaf = wire.add_nodes();
  leaf->set_op(v1::Node::CONST);
  leaf->mutable_dtype()->set_scalar(v1::DType::FLOAT32);
  leaf->mutable_arg()->set_f64(1.0);
  for (int i = 1; i <= depth; ++i) {
    v1::Node* node = wire.add_nodes();
    node->set_op(v1::Node::NEG);
    node->mutable_dtype()->set_scalar(v1::DType::FLOAT32);
    node->add_src(i - 1);
  }
  return wire;
}

TEST(Validate, RejectsMillionDeepChainWithoutCrashing) {
  v1::Graph wire = DeepChain(1'000'000);
  Graph graph;
  EXPECT_TRUE(StatusIs(DecodeGraph(wire, graph), Code::kInvalidArgument, {"over the limit"}));

  IrLimits generous;  // past the node limit, the depth limit still holds, iteratively
  generous.max_nodes = 2'000'000;
  Graph graph2;
  EXPECT_TRUE(StatusIs(DecodeGraph(wire, graph2, generous), Code::kInvalidArgument,
                       {"graph depth exceeds the limit"}));
}

}  // namespace
}  // namespace uopd
