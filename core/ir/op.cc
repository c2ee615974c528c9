#include "core/ir/op.h"

#include <array>
#include <utility>

namespace uopd {
namespace {

constexpr std::array<std::pair<Op, absl::string_view>, 54> kOpNames = {{
    {Op::kSink, "SINK"},
    {Op::kDefineGlobal, "DEFINE_GLOBAL"},
    {Op::kDefineVar, "DEFINE_VAR"},
    {Op::kConst, "CONST"},
    {Op::kRange, "RANGE"},
    {Op::kEnd, "END"},
    {Op::kIndex, "INDEX"},
    {Op::kLoad, "LOAD"},
    {Op::kStore, "STORE"},
    {Op::kReduce, "REDUCE"},
    {Op::kAfter, "AFTER"},
    {Op::kGroup, "GROUP"},
    {Op::kWhere, "WHERE"},
    {Op::kCast, "CAST"},
    {Op::kBitcast, "BITCAST"},
    {Op::kReshape, "RESHAPE"},
    {Op::kExp2, "EXP2"},
    {Op::kLog2, "LOG2"},
    {Op::kSin, "SIN"},
    {Op::kSqrt, "SQRT"},
    {Op::kReciprocal, "RECIPROCAL"},
    {Op::kNeg, "NEG"},
    {Op::kTrunc, "TRUNC"},
    {Op::kAdd, "ADD"},
    {Op::kSub, "SUB"},
    {Op::kMul, "MUL"},
    {Op::kFdiv, "FDIV"},
    {Op::kIdiv, "IDIV"},
    {Op::kMod, "MOD"},
    {Op::kMax, "MAX"},
    {Op::kPow, "POW"},
    {Op::kShl, "SHL"},
    {Op::kShr, "SHR"},
    {Op::kAnd, "AND"},
    {Op::kOr, "OR"},
    {Op::kXor, "XOR"},
    {Op::kCmplt, "CMPLT"},
    {Op::kCmpne, "CMPNE"},
    {Op::kCmpeq, "CMPEQ"},
    {Op::kMulacc, "MULACC"},
    {Op::kThreefry, "THREEFRY"},
    {Op::kSpecial, "SPECIAL"},
    {Op::kDefineLocal, "DEFINE_LOCAL"},
    {Op::kDefineReg, "DEFINE_REG"},
    {Op::kBarrier, "BARRIER"},
    {Op::kIf, "IF"},
    {Op::kEndif, "ENDIF"},
    {Op::kGep, "GEP"},
    {Op::kVectorize, "VECTORIZE"},
    {Op::kVconst, "VCONST"},
    {Op::kWmma, "WMMA"},
    {Op::kUnroll, "UNROLL"},
    {Op::kContract, "CONTRACT"},
    {Op::kCustom, "CUSTOM"},
}};

}  // namespace

std::optional<absl::string_view> OpNameIfKnown(int number) {
  for (const auto& [op, name] : kOpNames) {
    if (static_cast<int>(op) == number) return name;
  }
  return std::nullopt;
}

absl::string_view OpName(Op op) { return OpNameIfKnown(static_cast<int>(op)).value_or("?"); }

std::optional<Op> OpFromName(absl::string_view name) {
  for (const auto& [op, op_name] : kOpNames) {
    if (op_name == name) return op;
  }
  return std::nullopt;
}

bool IsUnaryAlu(Op op) {
  switch (op) {
    case Op::kExp2:
    case Op::kLog2:
    case Op::kSin:
    case Op::kSqrt:
    case Op::kReciprocal:
    case Op::kNeg:
    case Op::kTrunc:
      return true;
    default:
      return false;
  }
}

bool IsBinaryAlu(Op op) {
  int n = static_cast<int>(op);
  return (n >= static_cast<int>(Op::kAdd) && n <= static_cast<int>(Op::kCmpeq)) ||
         op == Op::kThreefry;
}

bool IsTernaryAlu(Op op) { return op == Op::kWhere || op == Op::kMulacc; }

bool IsComparison(Op op) { return op == Op::kCmplt || op == Op::kCmpne || op == Op::kCmpeq; }

bool IsPostLoweringOp(Op op) {
  // A custom kernel's register array (tinygrad 0.14's REG placeholder) is written by clients.
  return static_cast<int>(op) >= static_cast<int>(Op::kSpecial) && op != Op::kDefineReg;
}

bool IsTranscendental(Op op) {
  switch (op) {
    case Op::kExp2:
    case Op::kLog2:
    case Op::kSin:
    case Op::kSqrt:
    case Op::kPow:
    case Op::kFdiv:
    case Op::kReciprocal:
      return true;
    default:
      return false;
  }
}

}  // namespace uopd
