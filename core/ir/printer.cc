#include "core/ir/printer.h"

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

void NameSource(std::string* out, const UOp* src) { absl::StrAppend(out, "%", src->id()); }

std::string SourceList(const UOp& node) { return absl::StrJoin(node.src(), ", ", NameSource); }

}  // namespace

std::string DescribeNode(const UOp& node) {
  std::string out =
      absl::StrCat("%", node.id(), " ", OpName(node.op()), " ", DTypeToString(node.dtype()));
  if (node.num_src() > 0) absl::StrAppend(&out, " (", NameSources(node.src(), NameSource), ")");
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
