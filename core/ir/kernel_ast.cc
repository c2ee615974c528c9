#include "core/ir/kernel_ast.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/ir/decode.h"
#include "core/ir/flatten_reshapes.h"
#include "core/ir/hash.h"
#include "core/util/status_macros.h"
#include "core/wire/tinygrad_0_14.h"

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

absl::StatusOr<std::shared_ptr<const KernelAst>> DecodeKernelAst(const v1::Graph& wire,
                                                                 const IrLimits& limits) {
  if (wire.dialect() == v1::TINYGRAD_0_14) {
    UOPD_ASSIGN_OR_RETURN(v1::Graph spelled, TranslateTinygrad014(wire, limits.max_nodes));
    return DecodeKernelAst(spelled, limits);
  }
  auto ast = std::make_shared<KernelAst>();
  auto decoded = DecodeGraph(wire, ast->graph, limits);
  if (!decoded.ok()) return decoded.status();
  // The hash is of the kernel as the client sent it; what runs has its RESHAPEs flattened.
  ast->hash = AstHashHex(decoded->root);
  ast->root = FlattenReshapes(ast->graph, decoded->root);
  return ast;
}

}  // namespace uopd
