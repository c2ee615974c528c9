#include "backends/cpu/llvm_op_table.h"

namespace uopd {
namespace {

bool IsSigned(const DType& d) { return IsInt(d.scalar) && !IsUnsigned(d.scalar); }

}  // namespace

std::string LlvmBinaryInstruction(Op op, const DType& d, bool reassoc) {
  const bool fl = IsFloat(d.scalar);
  const bool is_bool = d.scalar == Scalar::kBool;
  const std::string fast = reassoc ? " reassoc" : "";
  switch (op) {
    case Op::kAdd:
      return is_bool ? "or" : fl ? "fadd" + fast : "add";
    case Op::kSub:
      return fl ? "fsub" : "sub";
    case Op::kMul:
      return is_bool ? "and" : fl ? "fmul" + fast : "mul";
    case Op::kFdiv:
      return "fdiv";
    case Op::kIdiv:
      return IsSigned(d) ? "sdiv" : "udiv";
    case Op::kMod:
      return IsSigned(d) ? "srem" : "urem";
    case Op::kAnd:
      return "and";
    case Op::kOr:
      return "or";
    case Op::kXor:
      return "xor";
    case Op::kShl:
      return "shl";
    case Op::kShr:
      return IsSigned(d) ? "ashr" : "lshr";
    default:
      return "";
  }
}

absl::string_view LlvmComparison(Op op, const DType& operand) {
  if (IsFloat(operand.scalar)) {
    return op == Op::kCmplt ? "fcmp olt" : op == Op::kCmpne ? "fcmp une" : "fcmp oeq";
  }
  if (op == Op::kCmplt) return IsSigned(operand) ? "icmp slt" : "icmp ult";
  return op == Op::kCmpne ? "icmp ne" : "icmp eq";
}

absl::string_view LlvmGreaterThan(const DType& d) {
  if (IsFloat(d.scalar)) return "fcmp ogt";
  return IsSigned(d) ? "icmp sgt" : "icmp ugt";
}

}  // namespace uopd
