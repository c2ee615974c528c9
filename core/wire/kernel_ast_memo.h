// KernelAstMemo: decoded kernel ASTs by their wire bytes. A client that sends the same kernel on
// every call (tinygrad's backend sends each scheduled kernel with Execute) would otherwise pay
// for decoding, validating and hashing it each time: ~20 µs for a 10-node AST, more than the
// rest of a tiny Execute's server work. A KernelAst is immutable, so every caller shares one.
#ifndef UOPD_CORE_WIRE_KERNEL_AST_MEMO_H_
#define UOPD_CORE_WIRE_KERNEL_AST_MEMO_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/ir/kernel_ast.h"
#include "core/ir/limits.h"
#include "core/wire/decode.h"
#include "uopd/v1/graph.pb.h"

namespace uopd {

// Safe for concurrent use.
class KernelAstMemo {
 public:
  // Keeps up to `max_entries` ASTs of at most `max_entry_bytes` wire bytes each (larger ones are
  // decoded every time: their decode dwarfs the copy a key would cost anyway, and they are
  // rare), so it holds at most their product in keys.
  explicit KernelAstMemo(size_t max_entries = 1024, size_t max_entry_bytes = 16 << 10)
      : max_entries_(max_entries), max_entry_bytes_(max_entry_bytes) {}

  // DecodeKernelAst(wire, limits), from the memo when these bytes were decoded before. Only
  // successes are kept, so `limits` must be the same on every call (a daemon's are fixed).
  absl::StatusOr<std::shared_ptr<const KernelAst>> Decode(const v1::Graph& wire,
                                                          const IrLimits& limits);

  size_t size() const;

 private:
  const size_t max_entries_;
  const size_t max_entry_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const KernelAst>> asts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd

#endif  // UOPD_CORE_WIRE_KERNEL_AST_MEMO_H_
