#include "core/ir/verify.h"

#include "absl/strings/str_cat.h"
#include "core/ir/flatten_reshapes.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

absl::Status Invalid(absl::string_view rule) { return absl::InvalidArgumentError(rule); }

std::string D(const DType& dtype) { return DTypeToString(dtype); }

absl::Status ExpectSources(const UOp& node, size_t min, size_t max) {
  size_t n = node.num_src();
  if (n >= min && n <= max) return absl::OkStatus();
  if (min == max) return Invalid(absl::StrCat("expects ", min, " sources, got ", n));
  if (max == SIZE_MAX) return Invalid(absl::StrCat("expects at least ", min, " sources, got ", n));
  return Invalid(absl::StrCat("expects ", min, " to ", max, " sources, got ", n));
}

absl::Status ExpectArg(const UOp& node, ArgKind kind, absl::string_view what) {
  if (node.arg().kind != kind) return Invalid(absl::StrCat("expects a ", what, " argument"));
  // Nothing reads ints beside these arguments; a stray list could only mean two things.
  if (!node.arg().ints.empty()) return Invalid(absl::StrCat("takes a ", what, " and no ints"));
  return absl::OkStatus();
}

absl::Status ExpectNoArg(const UOp& node) {
  if (node.arg().kind == ArgKind::kNone && node.arg().ints.empty()) return absl::OkStatus();
  return Invalid(absl::StrCat("takes no argument, got ", ArgToString(node.arg())));
}

bool IsIndexLike(const DType& dtype) { return !dtype.ptr && IsInt(dtype.scalar); }

// A pointer-producing node: the buffer operand of INDEX and AFTER chains.
bool IsBufferPointer(const UOp& node) {
  return node.dtype().ptr && (node.op() == Op::kDefineGlobal || node.op() == Op::kDefineReg ||
                              node.op() == Op::kAfter || node.op() == Op::kReshape);
}

absl::Status VerifyReshape(const UOp& node) {
  const UOp& buf = *node.src(0);
  if (!IsBufferPointer(buf)) {
    return Invalid(absl::StrCat("source 0 must be a buffer pointer, got ", OpName(buf.op()), " ",
                                D(buf.dtype())));
  }
  if (node.dtype() != buf.dtype()) {
    return Invalid(absl::StrCat("dtype must be its source's ", D(buf.dtype())));
  }
  const Arg& arg = node.arg();
  if (arg.kind != ArgKind::kNone || arg.ints.empty()) {
    return Invalid("takes the shape in arg.ints (and nothing else)");
  }
  int64_t elements = 1;
  for (int64_t d : arg.ints) {
    if (d <= 0 || elements > (int64_t{1} << 40) / d) {
      return Invalid(absl::StrCat("shape dimension ", d, " is not in [1, 2^40 / the others]"));
    }
    elements *= d;
  }
  if (buf.dtype().size >= 0 && elements != buf.dtype().size) {
    return Invalid(
        absl::StrCat("shape has ", elements, " elements, the buffer ", buf.dtype().size));
  }
  return absl::OkStatus();
}

absl::Status VerifyConst(const UOp& node) {
  const DType& dtype = node.dtype();
  const Arg& arg = node.arg();
  if (dtype.ptr || dtype.scalar == Scalar::kVoid) {
    return Invalid(absl::StrCat("a constant cannot have dtype ", D(dtype)));
  }
  // A vector constant's lanes are in ints, one per lane (made inside the pipeline only: the wire
  // has no vector constants). A scalar with ints would be two values, and the bounds proofs
  // and the code read different ones (a review helper's finding: proofs read i, the code ints).
  if (!arg.ints.empty() &&
      (dtype.count == 1 || arg.ints.size() != static_cast<size_t>(dtype.count))) {
    return Invalid(absl::StrCat("a constant of dtype ", D(dtype), " cannot have ", arg.ints.size(),
                                " values in ints"));
  }
  if (arg.kind == ArgKind::kInvalid) {
    if (dtype.scalar != Scalar::kIndex)
      return Invalid("the Invalid constant must have dtype index");
    return absl::OkStatus();
  }
  if (IsFloat(dtype.scalar)) {
    if (arg.kind == ArgKind::kF64 || arg.kind == ArgKind::kI64) return absl::OkStatus();
    return Invalid("a float constant needs an f64 argument");
  }
  if (dtype.scalar == Scalar::kBool) {
    if (arg.kind == ArgKind::kBool) return absl::OkStatus();
    return Invalid("a bool constant needs a b argument");
  }
  if (arg.kind == ArgKind::kI64 || arg.kind == ArgKind::kU64) return absl::OkStatus();
  return Invalid("an integer constant needs an i64 or u64 argument");
}

absl::Status VerifyIndex(const UOp& node) {
  const UOp& buf = *node.src(0);
  if (!IsBufferPointer(buf)) {
    return Invalid(absl::StrCat(
        "source 0 must be a buffer pointer (DEFINE_GLOBAL, DEFINE_REG, AFTER or RESHAPE), got ",
        OpName(buf.op()), " ", D(buf.dtype())));
  }
  const std::vector<int64_t>* shape = ReshapedShape(&buf);
  const size_t dims = shape == nullptr ? 1 : shape->size();
  if (node.num_src() != dims + 1) {
    return Invalid(absl::StrCat("takes one index per dimension of its buffer (", dims, "), got ",
                                node.num_src() - 1));
  }
  for (size_t i = 1; i < node.num_src(); ++i) {
    if (!IsIndexLike(node.src(i)->dtype())) {
      return Invalid(absl::StrCat("the index (source ", i, ") must be an integer, got ",
                                  D(node.src(i)->dtype())));
    }
  }
  // A pointer INDEX may carry the size of the slice it addresses (tinygrad's setitem, assign into
  // a view: float32*[1] into a float32*[10] buffer); accesses are checked against the buffer.
  const bool pointer = node.dtype().ptr && node.dtype().Base() == buf.dtype().Base() &&
                       node.dtype().addrspace == buf.dtype().addrspace;
  if (!pointer && node.dtype() != buf.dtype().Base()) {
    return Invalid(absl::StrCat("dtype must be a pointer to the buffer's ", D(buf.dtype().Base()),
                                " (", D(buf.dtype()), " or a slice of it) or the element itself"));
  }
  return absl::OkStatus();
}

absl::Status VerifyAlu(const UOp& node) {
  const DType& dtype = node.dtype();
  Op op = node.op();
  if (dtype.ptr) return Invalid("ALU ops do not take pointers");
  for (const UOp* src : node.src()) {
    if (src->dtype().ptr || src->dtype().IsVoid()) {
      return Invalid(absl::StrCat("operand ", OpName(src->op()), " has dtype ", D(src->dtype()),
                                  ", not a value"));
    }
  }
  if (op == Op::kWhere) {
    if (node.src(0)->dtype().scalar != Scalar::kBool) {
      return Invalid(absl::StrCat("condition must be bool, got ", D(node.src(0)->dtype())));
    }
    if (node.src(1)->dtype() != dtype || node.src(2)->dtype() != dtype) {
      return Invalid(absl::StrCat("branches ", D(node.src(1)->dtype()), " and ",
                                  D(node.src(2)->dtype()), " must both have dtype ", D(dtype)));
    }
    return absl::OkStatus();
  }
  if (op == Op::kThreefry) {
    for (const UOp* src : node.src()) {
      if (src->dtype().scalar != Scalar::kUint64) return Invalid("operands must be uint64");
    }
    if (dtype.scalar != Scalar::kUint64) return Invalid("result must be uint64");
    return absl::OkStatus();
  }
  const DType& operand = node.src(0)->dtype();
  for (const UOp* src : node.src()) {
    // Shift amounts may have their own integer type, as tinygrad allows.
    if ((op == Op::kShl || op == Op::kShr) && src == node.src(1)) continue;
    if (src->dtype() != operand) {
      return Invalid(absl::StrCat("operand dtypes differ: ", D(operand), " and ", D(src->dtype())));
    }
  }
  if (IsComparison(op)) {
    if (dtype.scalar != Scalar::kBool) return Invalid("comparisons yield bool");
    return absl::OkStatus();
  }
  if (dtype != operand) {
    return Invalid(absl::StrCat("result dtype ", D(dtype), " differs from operands ", D(operand)));
  }
  Scalar s = dtype.scalar;
  switch (op) {
    case Op::kExp2:
    case Op::kLog2:
    case Op::kSin:
    case Op::kSqrt:
    case Op::kReciprocal:
    case Op::kTrunc:
    case Op::kFdiv:
    case Op::kPow:
      if (!IsFloat(s)) return Invalid(absl::StrCat("needs a float dtype, got ", D(dtype)));
      break;
    case Op::kIdiv:
    case Op::kMod:
    case Op::kShl:
    case Op::kShr:
      if (!IsInt(s)) return Invalid(absl::StrCat("needs an integer dtype, got ", D(dtype)));
      if ((op == Op::kShl || op == Op::kShr) && !IsIndexLike(node.src(1)->dtype())) {
        return Invalid("the shift amount must be an integer");
      }
      break;
    case Op::kAnd:
    case Op::kOr:
    case Op::kXor:
      if (!IsIntLike(s))
        return Invalid(absl::StrCat("needs an integer or bool dtype, got ", D(dtype)));
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

}  // namespace

bool IsStatement(const UOp& node) {
  switch (node.op()) {
    case Op::kStore:
    case Op::kEnd:
    case Op::kGroup:
    case Op::kAfter:
    case Op::kSink:
      return true;
    default:
      return false;
  }
}

absl::Status VerifySink(const UOp& node) {
  // No sources: a kernel that does nothing (tinygrad's custom_kernel of an empty kernel).
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 0, SIZE_MAX));
  for (const UOp* src : node.src()) {
    if (!IsStatement(*src) || src->op() == Op::kSink) {
      return Invalid(absl::StrCat("sources must be statements (STORE, END, GROUP, AFTER), got ",
                                  OpName(src->op())));
    }
  }
  if (node.arg().kind != ArgKind::kNone && node.arg().kind != ArgKind::kKernel) {
    return Invalid("takes only a kernel argument");
  }
  return absl::OkStatus();
}

absl::Status VerifyDefineGlobal(const UOp& node, const IrLimits& limits) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 0, 0));
  UOPD_RETURN_IF_ERROR(ExpectArg(node, ArgKind::kI64, "slot (i64)"));
  if (!dtype.ptr) return Invalid(absl::StrCat("needs a pointer dtype, got ", D(dtype)));
  if (node.arg().i < 0 || node.arg().i > 4096) {
    return Invalid(absl::StrCat("slot ", node.arg().i, " is outside [0, 4096]"));
  }
  if (dtype.size < 0) return Invalid("buffer size must be given (size >= 0)");
  if (dtype.size > limits.max_buffer_elements) {
    return Invalid(absl::StrCat("buffer of ", dtype.size, " elements exceeds the limit of ",
                                limits.max_buffer_elements));
  }
  if (dtype.addrspace != AddrSpace::kGlobal) return Invalid("a buffer parameter is GLOBAL memory");
  return absl::OkStatus();
}

// A register array: each thread's own, as tinygrad's REG placeholder (a custom kernel's
// accumulator). Small: it lives in registers or on the stack of every thread.
absl::Status VerifyDefineReg(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 0, 0));
  UOPD_RETURN_IF_ERROR(ExpectArg(node, ArgKind::kI64, "id (i64)"));
  if (!dtype.ptr || dtype.addrspace != AddrSpace::kReg) {
    return Invalid(absl::StrCat("needs a REG pointer dtype, got ", D(dtype)));
  }
  if (dtype.count != 1) return Invalid("a register array holds scalars");
  if (dtype.size < 1 || dtype.size > kMaxRegisterElements) {
    return Invalid(absl::StrCat("a register array holds 1 to ", kMaxRegisterElements,
                                " elements, not ", dtype.size));
  }
  return absl::OkStatus();
}

absl::Status VerifyDefineVar(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 0, 0));
  UOPD_RETURN_IF_ERROR(ExpectArg(node, ArgKind::kVar, "var"));
  if (!IsIndexLike(dtype)) return Invalid(absl::StrCat("needs an integer dtype, got ", D(dtype)));
  if (node.arg().str.empty()) return Invalid("variable name is empty");
  if (node.arg().var_multiple < 1) {
    return Invalid(absl::StrCat("variable '", node.arg().str, "' has multiple_of ",
                                node.arg().var_multiple, " (it must be 0, 1 or more)"));
  }
  if (node.arg().var_min > node.arg().var_max) {
    return Invalid(absl::StrCat("variable '", node.arg().str, "' has min ", node.arg().var_min,
                                " > max ", node.arg().var_max));
  }
  return absl::OkStatus();
}

absl::Status VerifyRange(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 1, 1));
  UOPD_RETURN_IF_ERROR(ExpectArg(node, ArgKind::kRange, "range"));
  // An integer: tinygrad's UOp.range(n, dtype=dtypes.int) is an int32 RANGE. That its dtype
  // holds every value of its counter is checked when it is lowered, from its end's value range.
  if (!IsIndexLike(dtype) || dtype.count != 1) {
    return Invalid(absl::StrCat("needs an integer dtype (index), got ", D(dtype)));
  }
  if (!IsIndexLike(node.src(0)->dtype()) || node.src(0)->IsInvalid()) {
    return Invalid(absl::StrCat("the end must be an integer, got ", OpName(node.src(0)->op()), " ",
                                D(node.src(0)->dtype())));
  }
  if (static_cast<int>(node.arg().axis_type) < 1 ||
      static_cast<int>(node.arg().axis_type) > kMaxAxisType) {
    return Invalid("unknown axis type");
  }
  return absl::OkStatus();
}

absl::Status VerifyEnd(const UOp& node) {
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 2, SIZE_MAX));
  UOPD_RETURN_IF_ERROR(ExpectNoArg(node));
  if (!IsStatement(*node.src(0))) {
    return Invalid(absl::StrCat("source 0 must be a statement, got ", OpName(node.src(0)->op())));
  }
  for (size_t i = 1; i < node.num_src(); ++i) {
    if (node.src(i)->op() != Op::kRange) {
      return Invalid(
          absl::StrCat("source ", i, " must be a RANGE, got ", OpName(node.src(i)->op())));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyLoad(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 1, 2));
  if (node.src(0)->op() != Op::kIndex) {
    return Invalid(absl::StrCat("source 0 must be an INDEX, got ", OpName(node.src(0)->op())));
  }
  if (dtype != node.src(0)->dtype().Base()) {
    return Invalid(absl::StrCat("dtype must be the element type ", D(node.src(0)->dtype().Base())));
  }
  if (node.num_src() == 2 && node.src(1)->dtype() != dtype) {
    return Invalid("the alternative value must have the load's dtype");
  }
  return absl::OkStatus();
}

absl::Status VerifyStore(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 2, 2));
  if (!dtype.IsVoid()) return Invalid("dtype must be void");
  const UOp& target = *node.src(0);
  if (target.op() != Op::kIndex) {
    return Invalid(
        absl::StrCat("the target (source 0) must be an INDEX, got ", OpName(target.op())));
  }
  if (node.src(1)->dtype() != target.dtype().Base()) {
    return Invalid(absl::StrCat("stores ", D(node.src(1)->dtype()), " into a buffer of ",
                                D(target.dtype().Base())));
  }
  return absl::OkStatus();
}

absl::Status VerifyReduce(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 2, SIZE_MAX));
  UOPD_RETURN_IF_ERROR(ExpectArg(node, ArgKind::kReduceOp, "reduce op"));
  if (node.arg().reduce_op != Op::kAdd && node.arg().reduce_op != Op::kMul &&
      node.arg().reduce_op != Op::kMax) {
    return Invalid(
        absl::StrCat("reduce op must be ADD, MUL or MAX, got ", OpName(node.arg().reduce_op)));
  }
  if (dtype != node.src(0)->dtype() || dtype.ptr || dtype.IsVoid()) {
    return Invalid(absl::StrCat("dtype ", D(dtype), " must equal the reduced value's ",
                                D(node.src(0)->dtype())));
  }
  for (size_t i = 1; i < node.num_src(); ++i) {
    if (node.src(i)->op() != Op::kRange) {
      return Invalid(
          absl::StrCat("source ", i, " must be a RANGE, got ", OpName(node.src(i)->op())));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyAfter(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 1, SIZE_MAX));
  if (dtype != node.src(0)->dtype()) {
    return Invalid(absl::StrCat("dtype must equal source 0's ", D(node.src(0)->dtype())));
  }
  for (size_t i = 1; i < node.num_src(); ++i) {
    const UOp& dep = *node.src(i);
    if (!IsStatement(dep) && dep.op() != Op::kRange) {
      return Invalid(
          absl::StrCat("source ", i, " must be a statement or RANGE, got ", OpName(dep.op())));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyGroup(const UOp& node) {
  const DType& dtype = node.dtype();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 1, SIZE_MAX));
  if (!dtype.IsVoid()) return Invalid("dtype must be void");
  for (const UOp* src : node.src()) {
    if (!IsStatement(*src)) {
      return Invalid(absl::StrCat("sources must be statements, got ", OpName(src->op())));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyConversion(const UOp& node) {
  const DType& dtype = node.dtype();
  const Op op = node.op();
  UOPD_RETURN_IF_ERROR(ExpectSources(node, 1, 1));
  const DType& from = node.src(0)->dtype();
  if (dtype.ptr || from.ptr || dtype.IsVoid() || from.IsVoid()) {
    return Invalid(absl::StrCat("cannot convert ", D(from), " to ", D(dtype)));
  }
  if (op == Op::kBitcast && ScalarItemSize(from.scalar) != ScalarItemSize(dtype.scalar)) {
    return Invalid(absl::StrCat("bitcast between sizes: ", D(from), " to ", D(dtype)));
  }
  return absl::OkStatus();
}

// The checks every node passes whatever its op: scalar dtypes, GLOBAL buffers (and register
// arrays) of real types.
absl::Status VerifyNodeDType(const UOp& node) {
  const DType& dtype = node.dtype();
  const Op op = node.op();
  if (IsPostLoweringOp(op)) {
    return absl::UnimplementedError(
        absl::StrCat(OpName(op), " appears only after lowering; IR v1 kernels cannot contain it"));
  }
  if (dtype.count != 1) {
    return absl::UnimplementedError(
        absl::StrCat("vector dtype ", D(dtype), ": IR v1 kernels use scalar dtypes only"));
  }
  if (dtype.ptr && dtype.addrspace == AddrSpace::kLocal) {
    return absl::UnimplementedError(absl::StrCat(
        "pointer dtype ", D(dtype), ": only GLOBAL buffers and REG arrays are supported"));
  }
  if (dtype.ptr && (dtype.scalar == Scalar::kVoid || dtype.scalar == Scalar::kIndex)) {
    return Invalid(absl::StrCat("a buffer of ", D(dtype.Base()), " is not allowed"));
  }
  return absl::OkStatus();
}

absl::Status VerifyNode(const UOp& node, const IrLimits& limits) {
  UOPD_RETURN_IF_ERROR(VerifyNodeDType(node));
  const Op op = node.op();
  switch (op) {
    case Op::kSink:
      return VerifySink(node);
    case Op::kDefineGlobal:
      return VerifyDefineGlobal(node, limits);
    case Op::kDefineReg:
      return VerifyDefineReg(node);
    case Op::kDefineVar:
      return VerifyDefineVar(node);
    case Op::kConst:
      UOPD_RETURN_IF_ERROR(ExpectSources(node, 0, 0));
      return VerifyConst(node);
    case Op::kRange:
      return VerifyRange(node);
    case Op::kEnd:
      return VerifyEnd(node);
    case Op::kReshape:
      UOPD_RETURN_IF_ERROR(ExpectSources(node, 1, 1));
      return VerifyReshape(node);
    case Op::kIndex:
      UOPD_RETURN_IF_ERROR(ExpectSources(node, 2, SIZE_MAX));
      UOPD_RETURN_IF_ERROR(ExpectNoArg(node));
      return VerifyIndex(node);
    case Op::kLoad:
      return VerifyLoad(node);
    case Op::kStore:
      return VerifyStore(node);
    case Op::kReduce:
      return VerifyReduce(node);
    case Op::kAfter:
      return VerifyAfter(node);
    case Op::kGroup:
      return VerifyGroup(node);
    case Op::kCast:
    case Op::kBitcast:
      return VerifyConversion(node);
    default:
      if (IsUnaryAlu(op)) {
        UOPD_RETURN_IF_ERROR(ExpectSources(node, 1, 1));
      } else if (IsBinaryAlu(op)) {
        UOPD_RETURN_IF_ERROR(ExpectSources(node, 2, 2));
      } else if (IsTernaryAlu(op)) {
        UOPD_RETURN_IF_ERROR(ExpectSources(node, 3, 3));
      } else {
        return Invalid("unknown op");
      }
      return VerifyAlu(node);
  }
}

}  // namespace uopd
