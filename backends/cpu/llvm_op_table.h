// How LLVM IR spells the IR's ALU ops: one table the writer's scalar and vector code share
// (tinygrad's `code_for_op`), so each op is spelled in one place. The writer adds the operand
// type and the operands: "fadd reassoc <8 x float> %a, %b".
#ifndef UOPD_BACKENDS_CPU_LLVM_OP_TABLE_H_
#define UOPD_BACKENDS_CPU_LLVM_OP_TABLE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "core/ir/dtype.h"
#include "core/ir/op.h"

namespace uopd {

// The one instruction computing two-operand `op` on values of `d` (scalars or vectors; emulated
// small floats as the float they compute in): "add", "fadd reassoc", "or" for a bool ADD,
// "sdiv", "lshr"...; "" when `op` takes more than one instruction (MAX, POW). `reassoc` marks
// float ADD and MUL reassociable: what vectorizing a reduction needs (`nsz` would also let LLVM
// drop a sum's starting +0.0, so a row of -0.0 summed to -0.0).
std::string LlvmBinaryInstruction(Op op, const DType& d, bool reassoc = false);

// The comparison computing CMPLT, CMPNE or CMPEQ on operands of `operand`: "fcmp olt" (false
// on NaN), "fcmp une" (true on NaN), "icmp slt", "icmp ult", "icmp eq"...
absl::string_view LlvmComparison(Op op, const DType& operand);

// The comparison MAX picks its first operand with: "fcmp ogt", "icmp sgt" or "icmp ugt".
absl::string_view LlvmGreaterThan(const DType& d);

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_LLVM_OP_TABLE_H_
