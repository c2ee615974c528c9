#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/llvm_ir_writer.h"
#include "backends/cpu/llvm_op_table.h"
#include "core/codegen/const_value.h"
#include "core/codegen/strided_gather.h"
#include "core/ir/value_range.h"
#include "core/util/kernel_support.h"

namespace uopd {

std::string LlvmIrWriter::FusedMultiplyAdd(const std::string& a, const std::string& b,
                                           const std::string& c, const DType& d, bool reassoc) {
  const std::string t = d.count > 1 ? VecType(d) : RegType(d);
  const std::string suffix =
      d.count > 1 ? absl::StrCat("v", d.count, IntrinsicSuffix(ScalarType(d))) : IntrinsicSuffix(t);
  const std::string name = absl::StrCat("llvm.fmuladd.", suffix);
  Declare(t, name, absl::StrCat(t, ", ", t, ", ", t));
  std::string r = Fresh("fma");
  Line(absl::StrCat(r, " = call ", reassoc ? "reassoc " : "", t, " @", name, "(", t, " ", a, ", ",
                    t, " ", b, ", ", t, " ", c, ")"));
  return r;
}

std::string LlvmIrWriter::Combine(uopd::Op op, const std::string& a_in, const std::string& b_in,
                                  const DType& d, bool reassoc) {
  const bool vector = d.count > 1;
  const std::string a = vector ? a_in : ToCompute(a_in, d), b = vector ? b_in : ToCompute(b_in, d);
  const std::string t = vector ? VecType(d) : ComputeType(d);
  std::string r = Fresh(vector ? "vr" : "r");
  if (op == Op::kMax) {
    std::string c = Fresh(vector ? "vc" : "c");
    Line(absl::StrCat(c, " = ", LlvmGreaterThan(d), " ", t, " ", a, ", ", b));
    Line(absl::StrCat(r, " = select ", vector ? BoolVec(d.count) : "i1", " ", c, ", ", t, " ", a,
                      ", ", t, " ", b));
  } else if (op == Op::kPow) {
    Declare(t, absl::StrCat("llvm.pow.", IntrinsicSuffix(t)), absl::StrCat(t, ", ", t));
    Line(absl::StrCat(r, " = call ", t, " @llvm.pow.", IntrinsicSuffix(t), "(", t, " ", a, ", ", t,
                      " ", b, ")"));
  } else if ((op == Op::kIdiv || op == Op::kMod) && !vector) {
    return Divide(op, a, b, d);
  } else if (const std::string instr = LlvmBinaryInstruction(op, d, reassoc); !instr.empty()) {
    Line(absl::StrCat(r, " = ", instr, " ", t, " ", a, ", ", b));
  }
  return vector ? r : FromCompute(r, t, d);
}

std::string LlvmIrWriter::Divide(uopd::Op op, const std::string& a, const std::string& b,
                                 const DType& d) {
  std::string r = Fresh("q");
  Line(absl::StrCat(r, " = ", LlvmBinaryInstruction(op, d), " ", RegType(d), " ", a, ", ", b));
  return r;
}

std::string LlvmIrWriter::EmitAlu(const Instr& in, const std::string& self) {
  const DType& d = in.dtype;
  auto src = [&](int k) { return Op(in.src[k]); };
  auto src_type = [&](int k) { return TypeOf(in.src[k]); };
  uopd::Op op = in.op;
  if (IsComparison(op)) {
    const DType& od = src_type(0);
    const std::string a = ToCompute(src(0), od), b = ToCompute(src(1), od);
    Line(absl::StrCat(self, " = ", LlvmComparison(op, od), " ", ComputeType(od), " ", a, ", ", b));
    return self;
  }
  if (op == Op::kWhere) {
    std::string t = RegType(d);
    Line(absl::StrCat(self, " = select i1 ", src(0), ", ", t, " ", src(1), ", ", t, " ", src(2)));
    return self;
  }
  if (op == Op::kMulacc) return FusedMultiplyAdd(src(0), src(1), src(2), d, /*reassoc=*/false);
  if (op == Op::kThreefry) {
    Line(absl::StrCat(self, " = call i64 @uopd_threefry(i64 ", src(0), ", i64 ", src(1), ")"));
    return self;
  }
  if (op == Op::kShl || op == Op::kShr) {
    // Legalize masked the amount to the width and gave it the value's type.
    Line(absl::StrCat(self, " = ", LlvmBinaryInstruction(op, d), " ", RegType(d), " ", src(0), ", ",
                      src(1)));
    return self;
  }
  if (IsUnaryAlu(op)) {
    std::string x = ToCompute(src(0), d);
    std::string t = ComputeType(d);
    std::string r = Fresh("u");
    switch (op) {
      case Op::kNeg:
        if (IsFloatCompute(d))
          Line(absl::StrCat(r, " = fneg ", t, " ", x));
        else if (d.scalar == Scalar::kBool)
          Line(absl::StrCat(r, " = xor i1 ", x, ", true"));
        else
          Line(absl::StrCat(r, " = sub ", t, " 0, ", x));
        break;
      case Op::kReciprocal:
        Line(absl::StrCat(r, " = fdiv ", t, " ", FloatLiteral(1.0, t == "double"), ", ", x));
        break;
      default: {
        absl::string_view name = op == Op::kExp2   ? "exp2"
                                 : op == Op::kLog2 ? "log2"
                                 : op == Op::kSin  ? "sin"
                                 : op == Op::kSqrt ? "sqrt"
                                                   : "trunc";
        Declare(t, absl::StrCat("llvm.", name, ".", IntrinsicSuffix(t)), t);
        Line(absl::StrCat(r, " = call ", t, " @llvm.", name, ".", IntrinsicSuffix(t), "(", t, " ",
                          x, ")"));
        break;
      }
    }
    return FromCompute(r, t, d);
  }
  return Combine(op, src(0), src(1), d, false);
}

std::string LlvmIrWriter::Resize(const std::string& v, const DType& from, const DType& to) {
  int fb = Bits(from), tb = Bits(to);
  if (fb == tb) return v;
  std::string r = Fresh("rs");
  std::string inst = fb > tb ? "trunc" : (IsSigned(from) ? "sext" : "zext");
  Line(absl::StrCat(r, " = ", inst, " ", RegType(from), " ", v, " to ", RegType(to)));
  return r;
}

std::string LlvmIrWriter::UnsignedToFloat(const std::string& v, const DType& from,
                                          const std::string& target) {
  std::string wide = v;
  if (Bits(from) < 64) {
    wide = Fresh("cv");
    Line(absl::StrCat(wide, " = zext ", RegType(from), " ", v, " to i64"));
    std::string r = Fresh("cv");
    Line(absl::StrCat(r, " = sitofp i64 ", wide, " to ", target));
    return r;
  }
  std::string big = Fresh("cv"), half = Fresh("cv"), low = Fresh("cv"), odd = Fresh("cv");
  std::string small_f = Fresh("cv"), half_f = Fresh("cv"), big_f = Fresh("cv"), r = Fresh("cv");
  Line(absl::StrCat(big, " = icmp slt i64 ", wide, ", 0"));
  Line(absl::StrCat(half, " = lshr i64 ", wide, ", 1"));
  Line(absl::StrCat(low, " = and i64 ", wide, ", 1"));
  Line(absl::StrCat(odd, " = or i64 ", half, ", ", low));
  Line(absl::StrCat(small_f, " = sitofp i64 ", wide, " to ", target));
  Line(absl::StrCat(half_f, " = sitofp i64 ", odd, " to ", target));
  Line(absl::StrCat(big_f, " = fadd ", target, " ", half_f, ", ", half_f));
  Line(absl::StrCat(r, " = select i1 ", big, ", ", target, " ", big_f, ", ", target, " ", small_f));
  return r;
}

std::string LlvmIrWriter::EmitCast(int src_index, const DType& to, const std::string& self) {
  const DType& from = TypeOf(src_index);
  std::string v = Op(src_index);
  if (RegType(from) == RegType(to) && IsFloat(from.scalar) == IsFloat(to.scalar) &&
      from.scalar == to.scalar) {
    return v;
  }
  // Legalize made casts to bool compares.
  if (IsFloat(to.scalar)) {
    // To a float: compute in double for emulated targets (exact from every source but int64).
    std::string target = IsNarrowFloat(to.scalar) ? "double" : RegType(to);
    std::string r = Fresh("cv");
    if (IsFloat(from.scalar)) {
      std::string f = ToCompute(v, from);
      std::string ft = ComputeType(from);
      if (ft == target)
        r = f;
      else
        Line(absl::StrCat(r, " = ", ft == "double" ? "fptrunc " : "fpext ", ft, " ", f, " to ",
                          target));
    } else if (IsSigned(from) || from.scalar == Scalar::kBool) {
      Line(absl::StrCat(r, " = ", from.scalar == Scalar::kBool ? "uitofp " : "sitofp ",
                        RegType(from), " ", v, " to ", target));
    } else {
      r = UnsignedToFloat(v, from, target);
    }
    if (IsNarrowFloat(to.scalar)) return FromCompute(r, target, to);
    return r;
  }
  // To an integer. From a float: float32 or float64, to a signed type or uint64 (Legalize).
  if (IsFloat(from.scalar)) {
    const std::string& f = v;
    const std::string ft = RegType(from);
    std::string suffix = IntrinsicSuffix(ft);
    if (IsSigned(to)) {
      Declare(RegType(to), absl::StrCat("llvm.fptosi.sat.", RegType(to), ".", suffix), ft);
      Line(absl::StrCat(self, " = call ", RegType(to), " @llvm.fptosi.sat.", RegType(to), ".",
                        suffix, "(", ft, " ", f, ")"));
      return self;
    }
    Declare("i64", absl::StrCat("llvm.fptoui.sat.i64.", suffix), ft);
    Line(absl::StrCat(self, " = call i64 @llvm.fptoui.sat.i64.", suffix, "(", ft, " ", f, ")"));
    return self;
  }
  if (from.scalar == Scalar::kBool) {
    Line(absl::StrCat(self, " = zext i1 ", v, " to ", RegType(to)));
    return self;
  }
  return Resize(v, from, to);
}

std::string LlvmIrWriter::EmitBitcast(int src_index, const DType& to, const std::string& self) {
  const DType& from = TypeOf(src_index);
  std::string v = Op(src_index);
  std::string ft = RegType(from), tt = RegType(to);  // one width (Legalize)
  if (ft == tt) return v;
  Line(absl::StrCat(self, " = bitcast ", ft, " ", v, " to ", tt));
  return self;
}

std::string LlvmIrWriter::Address(int slot, const DType& d, const std::string& index,
                                  bool inbounds) {
  std::string addr = Fresh("p");
  Line(absl::StrCat(addr, " = getelementptr ", inbounds ? "inbounds " : "", MemType(d),
                    ", ptr %buf", slot, ", ", IndexType(), " ", index));
  return addr;
}

std::string LlvmIrWriter::EmitLoad(const Instr& in, int i, const std::string& self) {
  const DType& d = in.dtype;
  std::string zero = IsFloat(d.scalar) && !IsNarrowFloat(d.scalar) ? "0.0" : "0";
  std::string index = Op(in.src[0]);
  bool masked = in.src.size() > 1;
  if (masked && plan_.branched[i]) return EmitBranchedLoad(in, self, zero);
  if (masked) {
    // Branch-free: read element 0 when masked off (every buffer has one), then select.
    std::string safe = Fresh("si");
    Line(absl::StrCat(safe, " = select i1 ", Op(in.src[1]), ", ", IndexType(), " ", index, ", ",
                      IndexType(), " 0"));
    index = safe;
  }
  std::string addr = Address(in.slot, d, index);  // never a bool (Legalize)
  std::string value = masked ? Fresh("ld") : self;
  Line(absl::StrCat(value, " = load ", MemType(d), ", ptr ", addr));
  if (masked) {
    Line(absl::StrCat(self, " = select i1 ", Op(in.src[1]), ", ", RegType(d), " ", value, ", ",
                      RegType(d), " ", zero));
  }
  return self;
}

std::string LlvmIrWriter::EmitBranchedLoad(const Instr& in, const std::string& self,
                                           const std::string& zero) {
  const DType& d = in.dtype;
  const std::string b = Fresh("ml").substr(1);
  Line(absl::StrCat("br i1 ", Op(in.src[1]), ", label %", b, ".do, label %", b, ".skip"));
  Label(absl::StrCat(b, ".do"));
  std::string addr = Address(in.slot, d, Op(in.src[0]));
  std::string value = Fresh("ld");
  Line(absl::StrCat(value, " = load ", MemType(d), ", ptr ", addr));
  Line(absl::StrCat("br label %", b, ".join"));
  Label(absl::StrCat(b, ".skip"));
  Line(absl::StrCat("br label %", b, ".join"));
  Label(absl::StrCat(b, ".join"));
  Line(absl::StrCat(self, " = phi ", RegType(d), " [ ", value, ", %", b, ".do ], [ ", zero, ", %",
                    b, ".skip ]"));
  return self;
}

void LlvmIrWriter::EmitStore(const Instr& in, int i) {
  const DType& d = in.dtype;
  bool masked = in.src.size() > 2;
  if (masked) {
    Line(absl::StrCat("br i1 ", Op(in.src[2]), ", label %st", i, ", label %st", i, ".done"));
    Label(absl::StrCat("st", i));
  }
  std::string value = Op(in.src[1]);  // never a bool (Legalize)
  std::string addr = Address(in.slot, d, Op(in.src[0]));
  Line(absl::StrCat("store ", MemType(d), " ", value, ", ptr ", addr));
  if (masked) {
    Line(absl::StrCat("br label %st", i, ".done"));
    Label(absl::StrCat("st", i, ".done"));
  }
}

void LlvmIrWriter::EmitCheck(const Instr& in, int i) {
  std::string t = IndexType();
  std::string index = Op(in.src[0]);
  std::string ok = Fresh("inb");
  Int128 limit = p_.index_bits == 32 ? (Int128{1} << 31) - 1 : (Int128{1} << 63) - 1;
  if (in.size > limit) {
    Line(absl::StrCat(ok, " = icmp sge ", t, " ", index, ", 0"));
  } else {
    // Unsigned compare: negative indices are huge, so one test covers both ends.
    Line(absl::StrCat(ok, " = icmp ult ", t, " ", index, ", ", in.size));
  }
  if (in.src.size() > 1) {
    std::string off = Fresh("off");
    Line(absl::StrCat(off, " = xor i1 ", Op(in.src[1]), ", true"));
    std::string either = Fresh("inb");
    Line(absl::StrCat(either, " = or i1 ", off, ", ", ok));
    ok = either;
  }
  Line(absl::StrCat("br i1 ", ok, ", label %chk", i, ".ok, label %chk", i, ".fail, !prof !",
                    unlikely_id_));
  Label(absl::StrCat("chk", i, ".fail"));
  Line(absl::StrCat("ret i32 ", in.slot + 1));
  Label(absl::StrCat("chk", i, ".ok"));
}

}  // namespace uopd
