// Verification rules for single nodes (IR.md "Validation"): source counts, dtypes, arguments.
#ifndef UOPD_CORE_IR_VERIFY_H_
#define UOPD_CORE_IR_VERIFY_H_

#include "absl/status/status.h"
#include "core/ir/limits.h"
#include "core/ir/uop.h"

namespace uopd {

// The most elements a DEFINE_REG (a per-thread register array) may hold, and the most bytes a
// kernel's register arrays may take together: they live on the stack of the thread that runs
// the kernel (the CPU; CUDA's local memory), whose size no client decides.
inline constexpr int64_t kMaxRegisterElements = 1024;
inline constexpr int64_t kMaxRegisterBytes = 16 * 1024;

// Checks that `node` is a well-formed IR v1 node given its (already verified) sources.
// Returns INVALID_ARGUMENT with the broken rule ("expects 2 sources, got 3"), or UNIMPLEMENTED for
// constructs IR v1 allows but this server does not handle. The message does not name the node:
// the caller knows its wire index and prefixes it.
absl::Status VerifyNode(const UOp& node, const IrLimits& limits);

// True for nodes that are statements (valid as SINK, GROUP or END bodies).
bool IsStatement(const UOp& node);

}  // namespace uopd

#endif  // UOPD_CORE_IR_VERIFY_H_
