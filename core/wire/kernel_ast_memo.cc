#include "core/wire/kernel_ast_memo.h"

#include <utility>

#include "core/wire/decode.h"

namespace uopd {

absl::StatusOr<std::shared_ptr<const KernelAst>> KernelAstMemo::Decode(const v1::Graph& wire,
                                                                       const IrLimits& limits) {
  const size_t bytes = wire.ByteSizeLong();
  if (bytes > max_entry_bytes_ || max_entries_ == 0) return DecodeKernelAst(wire, limits);
  // The bytes themselves are the key: equal keys are equal ASTs, with no hash to trust.
  // (Serializing one message twice gives the same bytes: Graph has no map fields.)
  std::string key;
  if (!wire.SerializeToString(&key)) return DecodeKernelAst(wire, limits);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = asts_.find(key); it != asts_.end()) return it->second;
  }
  absl::StatusOr<std::shared_ptr<const KernelAst>> ast = DecodeKernelAst(wire, limits);
  if (!ast.ok()) return ast;
  absl::MutexLock lock(&mu_);
  // Bounded by starting over: a forgotten AST is only decoded again.
  if (asts_.size() >= max_entries_) asts_.clear();
  return asts_.try_emplace(std::move(key), *std::move(ast)).first->second;
}

size_t KernelAstMemo::size() const {
  absl::MutexLock lock(&mu_);
  return asts_.size();
}

}  // namespace uopd
