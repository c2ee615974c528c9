#include "backends/cuda/cuda_renderer.h"

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_prelude.h"
#include "core/codegen/const_value.h"
#include "core/ir/value_range.h"
#include "core/util/kernel_support.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

using cuda_prelude::kFp8Prelude;
using cuda_prelude::kKernelSupportSource;
using cuda_prelude::kPrelude;
using cuda_prelude::kSupportClose;
using cuda_prelude::kSupportOpen;

class CudaWriter {
 public:
  CudaWriter(const LinearProgram& p, const WarpReductionPlan& warps) : p_(p), warps_(warps) {}

  std::string Render() {
    operand_.resize(p_.instrs.size());
    depth_ = 1;
    for (size_t i = 0; i < p_.instrs.size(); ++i) EmitInstr(static_cast<int>(i));
    return Assemble();
  }

 private:
  std::string Index() const { return p_.index_bits == 32 ? "int" : "long long"; }

  std::string Type(const DType& d) const {
    // Headers for the float types are parsed only by kernels that use them: they are large.
    if (d.scalar == Scalar::kFloat16) uses_fp16_ = true;
    if (d.scalar == Scalar::kBfloat16) uses_bf16_ = true;
    if (d.scalar == Scalar::kFp8E4M3 || d.scalar == Scalar::kFp8E5M2) uses_fp8_ = true;
    switch (d.scalar) {
      case Scalar::kBool:
        return "bool";
      case Scalar::kIndex:
        return Index();
      case Scalar::kInt8:
        return "signed char";
      case Scalar::kUint8:
        return "unsigned char";
      case Scalar::kInt16:
        return "short";
      case Scalar::kUint16:
        return "unsigned short";
      case Scalar::kInt32:
        return "int";
      case Scalar::kUint32:
        return "unsigned int";
      case Scalar::kInt64:
        return "long long";
      case Scalar::kUint64:
        return "unsigned long long";
      case Scalar::kFloat16:
        return "half";
      case Scalar::kBfloat16:
        return "__nv_bfloat16";
      case Scalar::kFp8E4M3:
        return "__nv_fp8_e4m3";
      case Scalar::kFp8E5M2:
        return "__nv_fp8_e5m2";
      case Scalar::kFp8E4M3Fnuz:  // CUDA has no fnuz types: their bits, converted by the
      case Scalar::kFp8E5M2Fnuz:  // support library
        return "unsigned char";
      case Scalar::kFloat32:
        return "float";
      case Scalar::kFloat64:
        return "double";
      default:
        return "void";
    }
  }
  std::string MemType(const DType& d) const {
    return d.scalar == Scalar::kBool ? "unsigned char" : Type(d);
  }
  // Unsigned type of the same width, for wrapping signed arithmetic.
  std::string UnsignedOf(const DType& d) const {
    switch (ScalarItemSize(d.scalar)) {
      case 1:
        return "unsigned char";
      case 2:
        return "unsigned short";
      case 4:
        return "unsigned int";
      default:
        return "unsigned long long";
    }
  }
  static bool IsSignedInt(const DType& d) { return IsInt(d.scalar) && !IsUnsigned(d.scalar); }
  int Bits(const DType& d) const {
    if (d.scalar == Scalar::kIndex) return p_.index_bits;
    return ScalarItemSize(d.scalar) * 8;
  }

  void Line(absl::string_view text) {
    absl::StrAppend(&body_, std::string(2 * depth_, ' '), text, "\n");
  }
  const std::string& Op(int i) const { return operand_[i]; }
  const DType& TypeOf(int i) const { return p_.instrs[i].dtype; }

  // A value of an emulated float widened to float (others pass through).
  std::string Widen(const std::string& v, const DType& d) const {
    switch (d.scalar) {
      case Scalar::kFloat16:
        return absl::StrCat("__half2float(", v, ")");
      case Scalar::kBfloat16:
        return absl::StrCat("__bfloat162float(", v, ")");
      // The support library, not CUDA's conversion, which drops the sign of a NaN (a MAX that
      // selects a loaded NaN must keep it, as on the CPU).
      case Scalar::kFp8E4M3:
        return absl::StrCat("uopd_support::uopd_fp8e4m3_to_f32((", v, ").__x)");
      case Scalar::kFp8E5M2:
        return absl::StrCat("uopd_support::uopd_fp8e5m2_to_f32((", v, ").__x)");
      case Scalar::kFp8E4M3Fnuz:
        return absl::StrCat("uopd_support::uopd_fp8e4m3fnuz_to_f32(", v, ")");
      case Scalar::kFp8E5M2Fnuz:
        return absl::StrCat("uopd_support::uopd_fp8e5m2fnuz_to_f32(", v, ")");
      default:
        return v;
    }
  }
  // A float (or double) rounded to an emulated float.
  std::string Narrow(const std::string& v, const DType& d, bool from_double) const {
    switch (d.scalar) {
      case Scalar::kFloat16:
        return absl::StrCat(from_double ? "__double2half(" : "__float2half(", v, ")");
      case Scalar::kBfloat16:
        return absl::StrCat(from_double ? "__double2bfloat16(" : "__float2bfloat16(", v, ")");
      case Scalar::kFp8E4M3:
        return absl::StrCat("uopd_fp8e4m3(uopd_support::uopd_f64_to_fp8e4m3(", v, "))");
      case Scalar::kFp8E5M2:
        return absl::StrCat("uopd_fp8e5m2(uopd_support::uopd_f64_to_fp8e5m2(", v, "))");
      case Scalar::kFp8E4M3Fnuz:
        return absl::StrCat("(unsigned char)uopd_support::uopd_f64_to_fp8e4m3fnuz(", v, ")");
      case Scalar::kFp8E5M2Fnuz:
        return absl::StrCat("(unsigned char)uopd_support::uopd_f64_to_fp8e5m2fnuz(", v, ")");
      default:
        return v;
    }
  }

  // A finite value as a hex float literal; infinities and NaNs (sign and payload kept) from
  // their bits.
  static std::string FloatLiteral(uint64_t bits, bool is_double) {
    double v;
    if (is_double) {
      std::memcpy(&v, &bits, sizeof(v));
      if (std::isfinite(v)) return absl::StrFormat("%a", v);
      if (std::isinf(v)) {
        return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                     : "__longlong_as_double(0xfff0000000000000ULL)";
      }
      return absl::StrFormat("__longlong_as_double((long long)0x%016xULL)", bits);
    }
    float f;
    const uint32_t low = static_cast<uint32_t>(bits);
    std::memcpy(&f, &low, sizeof(f));
    if (std::isfinite(f)) return absl::StrFormat("%af", static_cast<double>(f));
    if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    return absl::StrFormat("__int_as_float((int)0x%08xU)", low);
  }

  std::string IntLiteral(Int128 v, const DType& d) const {
    int bits = Bits(d);
    Scalar as = IsUnsigned(d.scalar) ? (bits == 8    ? Scalar::kUint8
                                        : bits == 16 ? Scalar::kUint16
                                        : bits == 32 ? Scalar::kUint32
                                                     : Scalar::kUint64)
                                     : (bits == 8    ? Scalar::kInt8
                                        : bits == 16 ? Scalar::kInt16
                                        : bits == 32 ? Scalar::kInt32
                                                     : Scalar::kInt64);
    Int128 w = WrapToDType(v, as);
    if (IsUnsigned(d.scalar)) {
      return absl::StrCat("((", Type(d), ")", static_cast<uint64_t>(w), "ULL)");
    }
    if (w == -(Int128{1} << 63))
      return absl::StrCat("((", Type(d), ")(-9223372036854775807LL - 1))");
    return absl::StrCat("((", Type(d), ")", static_cast<int64_t>(w), "LL)");
  }

  // Lane `lane` of constant `in`.
  std::string ConstLiteral(const Instr& in, int lane = 0) const {
    const DType& d = in.dtype;
    const ConstValue c = DecodeConst(in, p_.index_bits, lane);
    switch (d.scalar) {
      case Scalar::kBool:
        return c.bits != 0 ? "true" : "false";
      case Scalar::kFloat16:
        return absl::StrFormat("__ushort_as_half((unsigned short)0x%04x)", c.bits);
      case Scalar::kBfloat16:
        return absl::StrFormat("__ushort_as_bfloat16((unsigned short)0x%04x)", c.bits);
      case Scalar::kFp8E4M3:
        return absl::StrFormat("uopd_fp8e4m3(0x%02x)", c.bits);
      case Scalar::kFp8E5M2:
        return absl::StrFormat("uopd_fp8e5m2(0x%02x)", c.bits);
      case Scalar::kFp8E4M3Fnuz:
      case Scalar::kFp8E5M2Fnuz:
        return absl::StrFormat("(unsigned char)0x%02x", c.bits);
      case Scalar::kFloat32:
      case Scalar::kFloat64:
        return FloatLiteral(c.bits, d.scalar == Scalar::kFloat64);
      default:
        return IntLiteral(IsUnsigned(d.scalar) ? Int128{c.bits} : Int128{c.as_int()}, d);
    }
  }

  std::string Define(int i, const DType& d, const std::string& expr) {
    std::string name = absl::StrCat("v", i);
    Line(absl::StrCat(Type(d), " ", name, " = ", expr, ";"));
    return name;
  }

  // a*b+c rounded once, for the float32/float64 multiply-adds FuseMultiplyAdds makes (NVRTC runs
  // with --fmad=false, so these are the only fused ones).
  std::string Fma(const std::string& a, const std::string& b, const std::string& c,
                  const DType& d) {
    return absl::StrCat(d.scalar == Scalar::kFloat64 ? "fma(" : "fmaf(", a, ", ", b, ", ", c, ")");
  }

  std::string Binary(uopd::Op op, const std::string& a_in, const std::string& b_in,
                     const DType& d) {
    if (IsNarrowFloat(d.scalar)) {
      std::string a = Widen(a_in, d), b = Widen(b_in, d);
      return Narrow(Binary(op, a, b, DType::Of(Scalar::kFloat32)), d, false);
    }
    const std::string& a = a_in;
    const std::string& b = b_in;
    bool is_bool = d.scalar == Scalar::kBool;
    // Signed arithmetic wraps (as the IR says) through the unsigned type; INDEX arithmetic is
    // proven not to overflow and stays signed.
    bool wrap = IsSignedInt(d) && d.scalar != Scalar::kIndex;
    auto wrapped = [&](const char* sym) {
      return absl::StrCat("(", Type(d), ")((", UnsignedOf(d), ")", a, " ", sym, " (", UnsignedOf(d),
                          ")", b, ")");
    };
    switch (op) {
      case Op::kAdd:
        return is_bool ? absl::StrCat("(", a, " || ", b, ")")
               : wrap  ? wrapped("+")
                       : absl::StrCat("(", a, " + ", b, ")");
      case Op::kSub:
        return wrap ? wrapped("-") : absl::StrCat("(", a, " - ", b, ")");
      case Op::kMul:
        return is_bool ? absl::StrCat("(", a, " && ", b, ")")
               : wrap  ? wrapped("*")
                       : absl::StrCat("(", a, " * ", b, ")");
      case Op::kFdiv:
        return absl::StrCat("(", a, " / ", b, ")");
      case Op::kIdiv:  // Legalize made the divisor safe (never 0, never -1 when signed)
        return absl::StrCat("(", Type(d), ")(", a, " / ", b, ")");
      case Op::kMod:
        return absl::StrCat("(", Type(d), ")(", a, " % ", b, ")");
      case Op::kMax:
        if (IsInt(d.scalar)) return absl::StrCat("uopd_imax<", Type(d), ">(", a, ", ", b, ")");
        return absl::StrCat("(", a, " > ", b, " ? ", a, " : ", b, ")");
      case Op::kPow:
        return absl::StrCat(d.scalar == Scalar::kFloat64 ? "pow(" : "powf(", a, ", ", b, ")");
      case Op::kAnd:
        return absl::StrCat("(", Type(d), ")(", a, " & ", b, ")");
      case Op::kOr:
        return absl::StrCat("(", Type(d), ")(", a, " | ", b, ")");
      case Op::kXor:
        return absl::StrCat("(", Type(d), ")(", a, " ^ ", b, ")");
      default:
        return "0";
    }
  }

  std::string Unary(uopd::Op op, const std::string& x_in, const DType& d) {
    if (IsNarrowFloat(d.scalar))
      return Narrow(Unary(op, Widen(x_in, d), DType::Of(Scalar::kFloat32)), d, false);
    bool dbl = d.scalar == Scalar::kFloat64;
    const std::string& x = x_in;
    switch (op) {
      case Op::kNeg:
        if (d.scalar == Scalar::kBool) return absl::StrCat("(!", x, ")");
        if (IsSignedInt(d) && d.scalar != Scalar::kIndex)
          return absl::StrCat("(", Type(d), ")(0ULL - (", UnsignedOf(d), ")", x, ")");
        return absl::StrCat("(-(", x, "))");
      case Op::kReciprocal:
        return absl::StrCat("(", dbl ? "1.0" : "1.0f", " / ", x, ")");
      case Op::kExp2:
        return absl::StrCat(dbl ? "exp2(" : "exp2f(", x, ")");
      case Op::kLog2:
        return absl::StrCat(dbl ? "log2(" : "log2f(", x, ")");
      case Op::kSin:
        return absl::StrCat(dbl ? "sin(" : "sinf(", x, ")");
      case Op::kSqrt:
        return absl::StrCat(dbl ? "sqrt(" : "sqrtf(", x, ")");
      case Op::kTrunc:
        return absl::StrCat(dbl ? "trunc(" : "truncf(", x, ")");
      default:
        return x;
    }
  }

  std::string Cast(const std::string& v, const DType& from, const DType& to) {
    if (from.scalar == to.scalar) return v;  // casts to bool are compares (Legalize)
    if (IsNarrowFloat(to.scalar)) {
      if (from.scalar == Scalar::kFloat64) return Narrow(v, to, true);
      if (IsNarrowFloat(from.scalar) || from.scalar == Scalar::kFloat32)
        return Narrow(Widen(v, from), to, false);
      return Narrow(absl::StrCat("(double)", v), to, true);  // integers: exact through double
    }
    std::string x = Widen(v, from);
    if (IsFloat(from.scalar) && !IsFloat(to.scalar)) {  // to a signed type or uint64 (Legalize)
      if (!IsUnsigned(to.scalar)) return absl::StrCat("uopd_f2s<", Type(to), ">(", x, ")");
      return absl::StrCat("uopd_f2u64(", x, ")");
    }
    return absl::StrCat("(", Type(to), ")", x);
  }

  std::string Bitcast(const std::string& v, const DType& to) {  // one width (Legalize)
    return absl::StrCat("uopd_bitcast<", Type(to), ">(", v, ")");
  }

  // This thread's index over the grid (one per warp when warps share reductions); threads at
  // or past `total` return.
  std::string EmitGlobalIndex(int i, const std::string& total) {
    if (warps_.enabled) {  // one warp per output; the lanes share its reductions
      Line("long long uopd_thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;");
      Line(absl::StrCat("int uopd_lane = (int)(uopd_thread & ", kWarpLanes - 1, ");"));
      Line(absl::StrCat(Index(), " v", i, " = (", Index(), ")(uopd_thread / ", kWarpLanes, ");"));
    } else {
      Line(absl::StrCat(Index(), " v", i, " = (", Index(), ")blockIdx.x * (", Index(),
                        ")blockDim.x + (", Index(), ")threadIdx.x;"));
    }
    Line(absl::StrCat("if (v", i, " >= ", total, ") return;"));
    return absl::StrCat("v", i);
  }

  // The expression of ALU instruction `in`.
  std::string AluExpr(const Instr& in) {
    auto src = [&](int k) { return Op(in.src[k]); };
    uopd::Op op = in.op;
    std::string expr;
    if (IsComparison(op)) {
      const DType& od = TypeOf(in.src[0]);
      const char* sym = op == Op::kCmplt ? " < " : op == Op::kCmpne ? " != " : " == ";
      expr = absl::StrCat("(", Widen(src(0), od), sym, Widen(src(1), od), ")");
    } else if (op == Op::kWhere) {
      expr = absl::StrCat("(", src(0), " ? ", src(1), " : ", src(2), ")");
    } else if (op == Op::kMulacc) {  // fused (FuseMultiplyAdds): one rounding
      expr = Fma(src(0), src(1), src(2), in.dtype);
    } else if (op == Op::kThreefry) {
      expr = absl::StrCat("uopd_support::uopd_threefry(", src(0), ", ", src(1), ")");
    } else if (op == Op::kShl || op == Op::kShr) {
      // Legalize masked the amount to the width.
      const DType& d = in.dtype;
      std::string amount = absl::StrCat("(int)", src(1));
      if (op == Op::kShl) {
        expr = absl::StrCat("(", Type(d), ")((", UnsignedOf(d), ")", src(0), " << ", amount, ")");
      } else {
        expr = absl::StrCat("(", Type(d), ")(", src(0), " >> ", amount, ")");
      }
    } else if (IsUnaryAlu(op)) {
      expr = Unary(op, src(0), in.dtype);
    } else {
      expr = Binary(op, src(0), src(1), in.dtype);
    }
    return expr;
  }

  // Closes the loop `end` ends; a loop the warp's lanes shared combines their partial results.
  void EndLoop(const Instr& end) {
    --depth_;
    Line("}");
    if (auto it = warps_.loops.find(end.src[0]); it != warps_.loops.end()) {
      // Combine the lanes' partial results: afterwards every lane holds the whole.
      for (const auto& [acc, op] : it->second) {
        // The shuffle is taken before the op: every lane must reach it (a MAX's select
        // would skip a second one in some lanes).
        const std::string& a = Op(acc);
        const DType& d = p_.instrs[acc].dtype;
        Line(absl::StrCat("for (int uopd_o = ", kWarpLanes / 2, "; uopd_o > 0; uopd_o >>= 1) {"));
        ++depth_;
        Line(absl::StrCat(Type(d), " uopd_other = uopd_shfl_xor(", a, ", uopd_o);"));
        Line(absl::StrCat(a, " = ", Binary(op, a, "uopd_other", d), ";"));
        --depth_;
        Line("}");
      }
    }
  }

  std::string ScalarLoad(int i, const Instr& in) {
    const DType& d = in.dtype;
    std::string zero = absl::StrCat("((", Type(d), ")0)");  // never a bool (Legalize)
    std::string element = absl::StrCat("data", in.slot, "[", Op(in.src[0]), "]");
    if (in.src.size() > 1)
      element = absl::StrCat("(", Op(in.src[1]), " ? ", element, " : ", zero, ")");
    return Define(i, d, element);
  }

  void EmitStore(const Instr& in) {
    std::string condition = in.src.size() > 2 ? Op(in.src[2]) : "";
    if (warps_.enabled) {  // every lane holds the value: one writes it
      condition =
          condition.empty() ? "uopd_lane == 0" : absl::StrCat("uopd_lane == 0 && ", condition);
    }
    if (TypeOf(in.src[1]).count > 1) {
      VectorStore(in, condition);
      return;
    }
    std::string store =
        absl::StrCat("data", in.slot, "[", Op(in.src[0]), "] = ", Op(in.src[1]), ";");
    Line(condition.empty() ? store : absl::StrCat("if (", condition, ") ", store));
  }

  std::string BeginLoop(int i, const Instr& in) {
    const std::string v = absl::StrCat("v", i);
    if (warps_.loops.contains(i)) {  // lane l takes iterations l, l + 32, ...
      Line(absl::StrCat("for (", Index(), " ", v, " = ", Op(in.src[0]), " + uopd_lane; ", v, " < ",
                        Op(in.src[1]), "; ", v, " += ", kWarpLanes, ") {"));
    } else {
      Line(absl::StrCat("for (", Index(), " ", v, " = ", Op(in.src[0]), "; ", v, " < ",
                        Op(in.src[1]), "; ++", v, ") {"));
    }
    ++depth_;
    return v;
  }

  // C copied in, D = A x B + C computed in place.
  void EmitWmma(int i, const Instr& in) {
    std::vector<std::string> c;
    if (in.kind == InstrKind::kWmma) {
      for (int k = 0; k < in.dtype.count; ++k)
        c.push_back(absl::StrCat(Op(in.src[2]), "[", k, "]"));
    } else {  // the accumulators in and out of the instruction
      for (size_t k = 2; k < in.src.size(); ++k) c.push_back(Op(in.src[k]));
    }
    const std::string d = FragmentArray(i, in.dtype, c);
    Line(absl::StrCat(MmaHelper(in), "(", Op(in.src[0]), ", ", Op(in.src[1]), ", ", d, ");"));
    if (in.kind == InstrKind::kWmma) {
      operand_[i] = d;
    } else {
      for (size_t k = 0; k < c.size(); ++k) Line(absl::StrCat(c[k], " = ", d, "[", k, "];"));
    }
  }

  void EmitInstr(int i) {
    const Instr& in = p_.instrs[i];
    Type(in.dtype);  // registers the headers a value of this type needs, constants included
    auto src = [&](int k) { return Op(in.src[k]); };
    switch (in.kind) {
      case InstrKind::kConst:
        if (in.dtype.count > 1) {  // a kept vector's value (Legalize's load of no elements)
          std::vector<std::string> lanes;
          for (int k = 0; k < in.dtype.count; ++k) lanes.push_back(ConstLiteral(in, k));
          operand_[i] = FragmentArray(i, in.dtype, lanes);
          return;
        }
        operand_[i] = ConstLiteral(in);
        return;
      case InstrKind::kVar:
        operand_[i] = absl::StrCat("((", Type(in.dtype), ")var", in.var, ")");
        return;
      case InstrKind::kGlobalIndex:
        operand_[i] = EmitGlobalIndex(i, src(0));
        return;
      case InstrKind::kAlu:
        operand_[i] = Define(i, in.dtype, AluExpr(in));
        return;
      case InstrKind::kCast:
        operand_[i] = Define(i, in.dtype, Cast(src(0), TypeOf(in.src[0]), in.dtype));
        return;
      case InstrKind::kBitcast:
        operand_[i] = Define(i, in.dtype, Bitcast(src(0), in.dtype));
        return;
      case InstrKind::kLoad:
        operand_[i] = in.dtype.count > 1 ? VectorLoad(i, in) : ScalarLoad(i, in);
        return;
      case InstrKind::kStore:
        EmitStore(in);
        return;
      case InstrKind::kCheckBounds: {
        std::string out = absl::StrCat("(unsigned long long)", src(0), " >= ", in.size, "ULL");
        if (in.src.size() > 1) out = absl::StrCat(src(1), " && ", out);
        Line(absl::StrCat("if (", out, ") { uopd_fail(uopd_status, ", in.slot + 1, "); return; }"));
        return;
      }
      case InstrKind::kAccDefine:
        Line(absl::StrCat(Type(in.dtype), " acc", i, " = ", src(0), ";"));
        operand_[i] = absl::StrCat("acc", i);
        return;
      case InstrKind::kAccUpdate: {
        std::string acc = src(0);
        Line(absl::StrCat(acc, " = ",
                          in.op == Op::kMulacc ? Fma(src(1), src(2), acc, in.dtype)
                                               : Binary(in.op, acc, src(1), in.dtype),
                          ";"));
        return;
      }
      case InstrKind::kAccRead:
        operand_[i] = Define(i, in.dtype, src(0));
        return;
      case InstrKind::kLoopBegin:
        operand_[i] = BeginLoop(i, in);
        return;
      case InstrKind::kLoopEnd:
        EndLoop(in);
        return;
      case InstrKind::kBuild: {  // a tensor core's fragment, or the value of a vector store
        std::vector<std::string> lanes;
        for (size_t k = 0; k < in.src.size(); ++k) lanes.push_back(src(static_cast<int>(k)));
        operand_[i] = FragmentArray(i, in.dtype, lanes);
        return;
      }
      case InstrKind::kExtract:
        operand_[i] = Define(i, in.dtype, absl::StrCat(src(0), "[", in.lane, "]"));
        return;
      case InstrKind::kWmma:
      case InstrKind::kWmmaInto:
        EmitWmma(i, in);
        return;
      case InstrKind::kBroadcast:
      case InstrKind::kHReduce:
        // Devectorize wrote these out (CUDA keeps only vector loads and stores): never reached.
        operand_[i] = "/* vector instruction */";
        return;
      case InstrKind::kThreadIndex:  // every thread stays: the block meets at barriers
        operand_[i] = Define(i, DType::Of(Scalar::kIndex),
                             absl::StrCat("(", Index(), ")blockIdx.x * (", Index(),
                                          ")blockDim.x + (", Index(), ")threadIdx.x"));
        return;
      case InstrKind::kSharedDefine:
        Line(absl::StrCat("__shared__ ", Type(in.dtype), " sh", i, "[", in.size, "];"));
        operand_[i] = absl::StrCat("sh", i);
        return;
      case InstrKind::kRegDefine:  // zeros, as on the CPU
        Line(absl::StrCat(Type(in.dtype), " r", i, "[", in.size, "] = {};"));
        operand_[i] = absl::StrCat("r", i);
        return;
      case InstrKind::kArrayLoad:
        operand_[i] = Define(i, in.dtype, absl::StrCat(src(0), "[", src(1), "]"));
        return;
      case InstrKind::kArrayStore:
        Line(absl::StrCat(src(0), "[", src(1), "] = ", src(2), ";"));
        return;
      case InstrKind::kBarrier:
        Line("__syncthreads();");
        return;
    }
  }

  // The accesses of `bytes` bytes one vector access is spelled as: the type moving one
  // chunk, and its bytes (a power of two, at most kGridVectorBytes).
  static std::pair<std::string, int> Chunk(int bytes) {
    if (bytes >= 16) return {"uint4", 16};
    if (bytes == 8) return {"uint2", 8};
    if (bytes == 4) return {"unsigned int", 4};
    return {"unsigned short", 2};
  }

  // `if` the address of `element` (an lvalue of global memory) is aligned to `bytes`: each
  // vector access tests its own, a buffer view may start anywhere in its base.
  void IfAligned(const std::string& element, int bytes) {
    Line(absl::StrCat("if (((unsigned long long)&", element, " & ", bytes - 1, "ULL) == 0ULL) {"));
  }

  // Vector load `in` (consecutive elements from its index, one mask for all lanes) as an array
  // `v<i>` filled by 16-byte accesses where the address allows, one element at a time where
  // it does not. The array's name.
  std::string VectorLoad(int i, const Instr& in) {
    const DType& d = in.dtype;
    const int size = ScalarItemSize(d.scalar);
    const auto [chunk_type, chunk_bytes] = Chunk(d.count * size);
    const std::string name = absl::StrCat("v", i);
    const std::string base = absl::StrCat("data", in.slot, "[", Op(in.src[0]), "]");
    Line(absl::StrCat("__align__(16) ", Type(d), " ", name, "[", d.count, "];"));
    if (in.src.size() > 1) {
      Line(absl::StrCat("if (", Op(in.src[1]), ") {"));
      ++depth_;
    }
    IfAligned(base, chunk_bytes);
    ++depth_;
    for (int at = 0; at < d.count * size; at += chunk_bytes) {
      const std::string word = absl::StrCat(name, "_", at);
      Line(absl::StrCat(chunk_type, " ", word, " = *(const ", chunk_type, "*)((const char*)&", base,
                        " + ", at, ");"));
      Line(absl::StrCat("memcpy((char*)", name, " + ", at, ", &", word, ", ", chunk_bytes, ");"));
    }
    --depth_;
    Line("} else {");
    ++depth_;
    for (int k = 0; k < d.count; ++k) {
      Line(absl::StrCat(name, "[", k, "] = (&", base, ")[", k, "];"));
    }
    --depth_;
    Line("}");
    if (in.src.size() > 1) {
      --depth_;
      Line("} else {");
      ++depth_;
      for (int k = 0; k < d.count; ++k)
        Line(absl::StrCat(name, "[", k, "] = (", Type(d), ")0;"));  // never a bool (Legalize)
      --depth_;
      Line("}");
    }
    return name;
  }

  // Vector store `in` (its value an array: a vector load's or a kBuild's), under `condition`
  // when not empty; aligned as VectorLoad.
  void VectorStore(const Instr& in, const std::string& condition) {
    const DType& d = TypeOf(in.src[1]);
    const int size = ScalarItemSize(d.scalar);
    const auto [chunk_type, chunk_bytes] = Chunk(d.count * size);
    const std::string& value = Op(in.src[1]);
    const std::string base = absl::StrCat("data", in.slot, "[", Op(in.src[0]), "]");
    if (!condition.empty()) {
      Line(absl::StrCat("if (", condition, ") {"));
      ++depth_;
    }
    IfAligned(base, chunk_bytes);
    ++depth_;
    for (int at = 0; at < d.count * size; at += chunk_bytes) {
      const std::string word = absl::StrCat(value, "_out", at);
      Line(absl::StrCat(chunk_type, " ", word, ";"));
      Line(absl::StrCat("memcpy(&", word, ", (const char*)", value, " + ", at, ", ", chunk_bytes,
                        ");"));
      Line(absl::StrCat("*(", chunk_type, "*)((char*)&", base, " + ", at, ") = ", word, ";"));
    }
    --depth_;
    Line("} else {");
    ++depth_;
    for (int k = 0; k < d.count; ++k) {
      Line(absl::StrCat("(&", base, ")[", k, "] = ", value, "[", k, "];"));
    }
    --depth_;
    Line("}");
    if (!condition.empty()) {
      --depth_;
      Line("}");
    }
  }

  // Declares fragment array `f<i>` of `d`'s count holding `values`: the compiler keeps it in
  // registers (constant indices only), aligned for the instruction's 32-bit words. Its name.
  std::string FragmentArray(int i, const DType& d, const std::vector<std::string>& values) {
    const std::string name = absl::StrCat("f", i);
    Line(absl::StrCat("__align__(16) ", Type(d), " ", name, "[", d.count, "] = {",
                      absl::StrJoin(values, ", "), "};"));
    return name;
  }

  // The device function spelling tensor core instruction `in` (mma.sync with D = C, in place
  // on its accumulator array), defined once per kernel; its name.
  std::string MmaHelper(const Instr& in) {
    const std::vector<int64_t>& shape = in.arg.ints;  // N, M, K, threads, elements of A, B, C
    const DType& a = p_.instrs[in.src[0]].dtype;
    const DType& b = p_.instrs[in.src[1]].dtype;
    auto ptx = [](Scalar s) -> std::string {
      switch (s) {
        case Scalar::kFloat16:
          return "f16";
        case Scalar::kBfloat16:
          return "bf16";
        case Scalar::kFloat32:
          return "tf32";
        case Scalar::kFp8E4M3:
          return "e4m3";
        case Scalar::kFp8E5M2:
          return "e5m2";
        default:
          return "?";
      }
    };
    const std::string out = in.dtype.scalar == Scalar::kFloat32 ? "f32" : "f16";
    const std::string in_type = ptx(a.scalar);
    const std::string shape_name = absl::StrCat("m", shape[1], "n", shape[0], "k", shape[2]);
    const std::string name = absl::StrCat("uopd_mma_", shape_name, "_", out, "_", in_type);
    if (!mma_helpers_.contains(name)) {
      // 32-bit registers per fragment.
      auto words = [](const DType& d) { return d.count * ScalarItemSize(d.scalar) / 4; };
      const int na = words(a), nb = words(b), nc = words(in.dtype);
      auto regs = [](int from, int n) {
        std::vector<std::string> r;
        for (int k = 0; k < n; ++k) r.push_back(absl::StrCat("%", from + k));
        return absl::StrCat("{", absl::StrJoin(r, ", "), "}");
      };
      auto operands = [](const std::string& constraint, const std::string& array, int n) {
        std::vector<std::string> r;
        for (int k = 0; k < n; ++k)
          r.push_back(absl::StrCat("\"", constraint, "\"(", array, "[", k, "])"));
        return absl::StrJoin(r, ", ");
      };
      mma_helpers_[name] = absl::StrCat(
          "__device__ __forceinline__ void ", name, "(const ", Type(a), "* a, const ", Type(b),
          "* b, ", Type(in.dtype), "* c) {\n", "  const unsigned* a_pk = (const unsigned*)a;\n",
          "  const unsigned* b_pk = (const unsigned*)b;\n", "  unsigned* c_pk = (unsigned*)c;\n",
          "  asm volatile(\"mma.sync.aligned.", shape_name, ".row.col.", out, ".", in_type, ".",
          in_type, ".", out, " ", regs(0, nc), ", ", regs(nc, na), ", ", regs(nc + na, nb), ", ",
          regs(0, nc), ";\"\n      : ", operands("+r", "c_pk", nc),
          "\n      : ", operands("r", "a_pk", na), ", ", operands("r", "b_pk", nb), ");\n}\n");
    }
    return name;
  }

  std::string Assemble() {
    std::vector<std::string> params;
    for (int slot = 0; slot < p_.buf_count; ++slot) {
      const BufferParam* param = nullptr;
      for (const BufferParam& p : p_.globals) {
        if (p.slot == slot) param = &p;
      }
      params.push_back(param == nullptr
                           ? absl::StrCat("void* __restrict__ data", slot)
                           : absl::StrCat(MemType(param->dtype), "* __restrict__ data", slot));
    }
    for (size_t v = 0; v < p_.var_names.size(); ++v)
      params.push_back(absl::StrCat("long long var", v));
    params.push_back("int* __restrict__ uopd_status");
    int threads = p_.grid_ends.empty() ? 1 : kCudaBlockThreads;
    std::string includes;
    if (uses_fp16_ || uses_bf16_ || uses_fp8_) includes += "#include <cuda_fp16.h>\n";
    if (uses_bf16_ || uses_fp8_) includes += "#include <cuda_bf16.h>\n";
    if (uses_fp8_) includes += "#include <cuda_fp8.h>\n";
    std::string mma;
    for (const auto& [name, helper] : mma_helpers_) mma += helper;
    return absl::StrCat(includes, kPrelude, kSupportOpen, kKernelSupportSource, kSupportClose,
                        uses_fp8_ ? kFp8Prelude : "", mma, "\n// kernel ", p_.name, ": ",
                        p_.proven_accesses, " accesses proven in bounds, ", p_.guarded_accesses,
                        " checked at run time\n", "extern \"C\" __global__ void __launch_bounds__(",
                        threads, ") ", p_.name, "(", absl::StrJoin(params, ", "), ") {\n", body_,
                        "}\n");
  }

  const LinearProgram& p_;
  const WarpReductionPlan& warps_;
  std::vector<std::string> operand_;
  std::string body_;
  int depth_ = 1;
  mutable bool uses_fp16_ = false, uses_bf16_ = false, uses_fp8_ = false;
  std::map<std::string, std::string> mma_helpers_;  // by name, in name order
};

}  // namespace

std::string RenderCudaC(const LinearProgram& program, const WarpReductionPlan& warps) {
  return CudaWriter(program, warps).Render();
}

CodegenTarget CudaRenderer::Target() { return CodegenTarget::CudaGrid(); }

std::string CudaRenderer::Spell(const LoweredKernel& kernel) const {
  return RenderCudaC(kernel.program, kernel.warps);
}

std::string CudaRenderer::Identity() const {
  return absl::StrCat("cuda-c/v17;block=", kCudaBlockThreads);
}

}  // namespace uopd
