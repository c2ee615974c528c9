#include "core/ir/kernel_ast.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace uopd {

std::string KernelAst::DefaultName() const {
  if (root->arg().kind == ArgKind::kKernel && !root->arg().str.empty()) return root->arg().str;
  return "k_" + hash.substr(0, 12);
}

std::string KernelAst::Label() const {
  const std::string name = DefaultName();
  if (absl::StartsWith(name, "k_") && absl::StartsWith(hash, name.substr(2))) return name;
  return absl::StrCat(name, ", ast ", hash.substr(0, 12));
}

}  // namespace uopd
