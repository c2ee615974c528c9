// Op: the operations of kernel ASTs (IR.md), with their names and classes.
#ifndef UOPD_CORE_IR_OP_H_
#define UOPD_CORE_IR_OP_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace uopd {

// Numbered as uopd.v1.Node.Op so decoding is a checked cast.
enum class Op : uint8_t {
  kSink = 1,
  kDefineGlobal = 2,
  kDefineVar = 3,
  kConst = 4,
  kRange = 5,
  kEnd = 6,
  kIndex = 7,
  kLoad = 8,
  kStore = 9,
  kReduce = 10,
  kAfter = 11,
  kGroup = 12,
  kWhere = 13,
  kCast = 14,
  kBitcast = 15,
  kReshape = 16,
  kExp2 = 20,
  kLog2 = 21,
  kSin = 22,
  kSqrt = 23,
  kReciprocal = 24,
  kNeg = 25,
  kTrunc = 26,
  kAdd = 30,
  kSub = 31,
  kMul = 32,
  kFdiv = 33,
  kIdiv = 34,
  kMod = 35,
  kMax = 36,
  kPow = 37,
  kShl = 38,
  kShr = 39,
  kAnd = 40,
  kOr = 41,
  kXor = 42,
  kCmplt = 43,
  kCmpne = 44,
  kCmpeq = 45,
  kMulacc = 50,
  kThreefry = 51,
  kSpecial = 60,
  kDefineLocal = 61,
  kDefineReg = 62,
  kBarrier = 63,
  kIf = 64,
  kEndif = 65,
  kGep = 66,
  kVectorize = 67,
  kVconst = 68,
  kWmma = 69,
  kUnroll = 70,
  kContract = 71,
  kCustom = 72,
};

// The op's name as IR.md spells it ("ADD"); nullopt for a number that names no op.
std::optional<absl::string_view> OpNameIfKnown(int number);
// The op's name; "?" for a value outside the enum.
absl::string_view OpName(Op op);
std::optional<Op> OpFromName(absl::string_view name);

bool IsUnaryAlu(Op op);
bool IsBinaryAlu(Op op);
bool IsTernaryAlu(Op op);  // WHERE, MULACC (THREEFRY is binary: counter, key)
inline bool IsAlu(Op op) { return IsUnaryAlu(op) || IsBinaryAlu(op) || IsTernaryAlu(op); }
bool IsComparison(Op op);  // CMPLT, CMPNE, CMPEQ: result BOOL
// Ops that exist only after lowering; IR v1 kernels must not contain them.
bool IsPostLoweringOp(Op op);
// Transcendental or division ops (the corpus widens float tolerances for these).
bool IsTranscendental(Op op);

}  // namespace uopd

#endif  // UOPD_CORE_IR_OP_H_
