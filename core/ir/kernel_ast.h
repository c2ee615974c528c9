// KernelAst: a decoded, validated kernel AST with the Graph that owns its nodes (made from the
// wire by DecodeKernelAst, core/wire/decode.h). Immutable once
// built, so one instance is shared by everything compiled from it.
#ifndef UOPD_CORE_IR_KERNEL_AST_H_
#define UOPD_CORE_IR_KERNEL_AST_H_

#include <memory>
#include <string>

#include "core/ir/graph.h"

namespace uopd {

struct KernelAst {
  Graph graph;
  const UOp* root = nullptr;
  std::string hash;  // AstHashHex(root); code generation's own forms keep their kernel's

  // The kernel's name from its SINK, or "k_" and the first hash digits when it has none.
  std::string DefaultName() const;
  // How errors name the kernel: "k_1a2b3c4d5e6f", or "name, ast 1a2b3c4d5e6f" for a named one
  // (tinygrad's kernels are unnamed or share names: the hash tells them apart).
  std::string Label() const;
};

}  // namespace uopd

#endif  // UOPD_CORE_IR_KERNEL_AST_H_
