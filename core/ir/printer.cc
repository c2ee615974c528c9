#include "core/ir/printer.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ir/graph.h"

namespace uopd {
namespace {

std::string TinygradDType(const DType& dtype) {
  std::string out = absl::StrCat("dtypes.", ScalarShortName(dtype.scalar));
  if (dtype.ptr) absl::StrAppend(&out, ".ptr(", dtype.size, ")");
  return out;
}

// Every source, or (`limit` > 0) the first `limit` and how many there are in all.
std::string SourceList(const UOp& node, size_t limit = 0) {
  const size_t named = limit > 0 ? std::min(limit, node.num_src()) : node.num_src();
  std::string out =
      absl::StrJoin(node.src().begin(), node.src().begin() + named, ", ",
                    [](std::string* out, const UOp* src) { absl::StrAppend(out, "%", src->id()); });
  if (named < node.num_src()) absl::StrAppend(&out, ", ... ", node.num_src(), " in all");
  return out;
}

}  // namespace

std::string DescribeNode(const UOp& node) {
  std::string out =
      absl::StrCat("%", node.id(), " ", OpName(node.op()), " ", DTypeToString(node.dtype()));
  // Error messages name a node this way: its first sources only (a node may list thousands).
  if (node.num_src() > 0) absl::StrAppend(&out, " (", SourceList(node, 8), ")");
  if (node.arg().kind != ArgKind::kNone) absl::StrAppend(&out, " arg=", ArgToString(node.arg()));
  return out;
}

std::string PrintGraph(const UOp* root) {
  std::string out;
  for (const UOp* node : Toposort(root)) {
    absl::StrAppend(&out, "%", node->id(), " = UOp(Ops.", OpName(node->op()), ", ",
                    TinygradDType(node->dtype()), ", arg=",
                    node->arg().kind == ArgKind::kNone ? "None" : ArgToString(node->arg()),
                    ", src=(", SourceList(*node), node->num_src() == 1 ? ",))\n" : "))\n");
  }
  return out;
}

}  // namespace uopd
