#include "backends/cpu/llvm_ir_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/codegen/const_value.h"
#include "core/codegen/strided_gather.h"
#include "core/ir/value_range.h"
#include "core/util/kernel_support.h"

namespace uopd {
namespace {

absl::string_view NarrowFn(Scalar s) {
  switch (s) {
    case Scalar::kFloat16:
      return "uopd_f64_to_f16";
    case Scalar::kBfloat16:
      return "uopd_f64_to_bf16";
    case Scalar::kFp8E4M3:
      return "uopd_f64_to_fp8e4m3";
    case Scalar::kFp8E4M3Fnuz:
      return "uopd_f64_to_fp8e4m3fnuz";
    case Scalar::kFp8E5M2Fnuz:
      return "uopd_f64_to_fp8e5m2fnuz";
    default:
      return "uopd_f64_to_fp8e5m2";
  }
}
absl::string_view WidenFn(Scalar s) {
  switch (s) {
    case Scalar::kFloat16:
      return "uopd_f16_to_f32";
    case Scalar::kBfloat16:
      return "uopd_bf16_to_f32";
    case Scalar::kFp8E4M3:
      return "uopd_fp8e4m3_to_f32";
    case Scalar::kFp8E4M3Fnuz:
      return "uopd_fp8e4m3fnuz_to_f32";
    case Scalar::kFp8E5M2Fnuz:
      return "uopd_fp8e5m2fnuz_to_f32";
    default:
      return "uopd_fp8e5m2_to_f32";
  }
}

// Assemble declares the other formats' conversions in every module; the fnuz ones only where used,
// so kernels without them are spelled as before.
bool IsFnuz(Scalar s) { return s == Scalar::kFp8E4M3Fnuz || s == Scalar::kFp8E5M2Fnuz; }

}  // namespace

std::string LlvmIrWriter::Render() {
  operand_.resize(p_.instrs.size());
  for (size_t i = 0; i < p_.instrs.size(); ++i) EmitInstr(static_cast<int>(i));
  if (grid_loop_ >= 0) EndLoop(grid_loop_);
  return Assemble();
}

std::string LlvmIrWriter::RegType(const DType& d) const {
  switch (d.scalar) {
    case Scalar::kBool:
      return "i1";
    case Scalar::kIndex:
      return IndexType();
    case Scalar::kInt8:
    case Scalar::kUint8:
    case Scalar::kFp8E4M3:
    case Scalar::kFp8E5M2:
    case Scalar::kFp8E4M3Fnuz:
    case Scalar::kFp8E5M2Fnuz:
      return "i8";
    case Scalar::kInt16:
    case Scalar::kUint16:
    case Scalar::kFloat16:
    case Scalar::kBfloat16:
      return "i16";
    case Scalar::kInt32:
    case Scalar::kUint32:
      return "i32";
    case Scalar::kInt64:
    case Scalar::kUint64:
      return "i64";
    case Scalar::kFloat32:
      return "float";
    case Scalar::kFloat64:
      return "double";
    default:
      return "void";
  }
}

std::string LlvmIrWriter::MemType(const DType& d) const {
  return d.scalar == Scalar::kBool ? "i8" : RegType(d);
}

std::string LlvmIrWriter::ComputeType(const DType& d) const {
  return IsNarrowFloat(d.scalar) ? "float" : RegType(d);
}

int LlvmIrWriter::Bits(const DType& d) const {
  if (d.scalar == Scalar::kIndex) return p_.index_bits;
  if (d.scalar == Scalar::kBool) return 1;
  return ScalarItemSize(d.scalar) * 8;
}

std::string LlvmIrWriter::FloatLiteral(double v, bool is_double) {
  if (!is_double) v = static_cast<double>(static_cast<float>(v));
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return absl::StrFormat("0x%016X", bits);
}

std::string LlvmIrWriter::ConstLiteral(const Instr& in, int lane) const {
  const DType& d = in.dtype;
  const ConstValue c = DecodeConst(in, p_.index_bits, lane);
  if (d.scalar == Scalar::kBool) return c.bits != 0 ? "true" : "false";
  if (d.scalar == Scalar::kFloat64) return absl::StrFormat("0x%016X", c.bits);
  if (d.scalar == Scalar::kFloat32) {
    // LLVM spells a float constant as the double of the same value (exact, NaNs included).
    float f;
    const uint32_t bits = static_cast<uint32_t>(c.bits);
    std::memcpy(&f, &bits, sizeof(f));
    return FloatLiteral(static_cast<double>(f), /*is_double=*/true);
  }
  // Small floats are their bits in an integer register; integers print as the signed value
  // of their bits at the register width.
  const int width = IsNarrowFloat(d.scalar) ? ScalarItemSize(d.scalar) * 8 : Bits(d);
  const Scalar as = width == 8    ? Scalar::kInt8
                    : width == 16 ? Scalar::kInt16
                    : width == 32 ? Scalar::kInt32
                                  : Scalar::kInt64;
  return absl::StrCat(static_cast<int64_t>(WrapToDType(Int128{c.as_int()}, as)));
}

std::string LlvmIrWriter::ToCompute(const std::string& value, const DType& d) {
  if (!IsNarrowFloat(d.scalar)) return value;
  std::string wide = Fresh("w");
  Line(absl::StrCat(wide, " = zext ", RegType(d), " ", value, " to i32"));
  std::string f = Fresh("f");
  if (IsFnuz(d.scalar)) Declare("float", std::string(WidenFn(d.scalar)), "i32");
  Line(absl::StrCat(f, " = call float @", WidenFn(d.scalar), "(i32 ", wide, ")"));
  return f;
}

std::string LlvmIrWriter::FromCompute(const std::string& value, const std::string& from_type,
                                      const DType& d) {
  if (!IsNarrowFloat(d.scalar)) return value;
  std::string dbl = value;
  if (from_type == "float") {
    dbl = Fresh("d");
    Line(absl::StrCat(dbl, " = fpext float ", value, " to double"));
  }
  std::string bits = Fresh("b");
  if (IsFnuz(d.scalar)) Declare("i32", std::string(NarrowFn(d.scalar)), "double");
  Line(absl::StrCat(bits, " = call i32 @", NarrowFn(d.scalar), "(double ", dbl, ")"));
  std::string out = Fresh("h");
  Line(absl::StrCat(out, " = trunc i32 ", bits, " to ", RegType(d)));
  return out;
}

void LlvmIrWriter::EmitInstr(int i) {
  const Instr& in = p_.instrs[i];
  const std::string self = absl::StrCat("%v", i);
  if (IsVectorInstr(in)) {
    EmitVector(i, self);
    return;
  }
  switch (in.kind) {
    case InstrKind::kConst:
      operand_[i] = ConstLiteral(in);
      return;
    case InstrKind::kVar: {
      std::string arg = absl::StrCat("%var", in.var);
      if (RegType(in.dtype) == "i64") {
        operand_[i] = arg;
      } else {
        Line(absl::StrCat(self, " = trunc i64 ", arg, " to ", RegType(in.dtype)));
        operand_[i] = self;
      }
      return;
    }
    case InstrKind::kAlu:
      operand_[i] = EmitAlu(in, self);
      return;
    case InstrKind::kCast:
      operand_[i] = EmitCast(in.src[0], in.dtype, self);
      return;
    case InstrKind::kBitcast:
      operand_[i] = EmitBitcast(in.src[0], in.dtype, self);
      return;
    case InstrKind::kLoad:
      operand_[i] = EmitLoad(in, i, self);
      return;
    case InstrKind::kStore:
      EmitStore(in, i);
      return;
    case InstrKind::kCheckBounds:
      EmitCheck(in, i);
      return;
    case InstrKind::kAccDefine: {
      std::string type = RegType(in.dtype);
      absl::StrAppend(&allocas_, "  %acc", i, " = alloca ", type, "\n");
      Line(absl::StrCat("store ", type, " ", Op(in.src[0]), ", ptr %acc", i));
      operand_[i] = absl::StrCat("%acc", i);
      return;
    }
    case InstrKind::kAccUpdate:
      EmitAccUpdate(in);
      return;
    case InstrKind::kAccRead:
      Line(absl::StrCat(self, " = load ", RegType(in.dtype), ", ptr ", Op(in.src[0])));
      operand_[i] = self;
      return;
    case InstrKind::kLoopBegin:
      operand_[i] = BeginLoop(i, Op(in.src[0]), Op(in.src[1]));
      return;
    case InstrKind::kGlobalIndex:
      // GPU lowerings only: every grid thread becomes one iteration of a loop around the rest
      // of the kernel, so GPU-lowered programs can be run and checked on the CPU.
      operand_[i] = BeginLoop(i, "0", Op(in.src[0]));
      grid_loop_ = i;
      return;
    case InstrKind::kLoopEnd:
      EndLoop(in.src[0]);
      return;
    case InstrKind::kBroadcast:
    case InstrKind::kExtract:
    case InstrKind::kBuild:
    case InstrKind::kHReduce:
      EmitVector(i, self);  // vector kinds, whatever their width
      return;
    case InstrKind::kSharedDefine:  // a block's array: the CPU runs one block at a time
    case InstrKind::kRegDefine:     // a thread's: each CPU thread calls the kernel on its own
      absl::StrAppend(&allocas_, "  %sh", i, " = alloca [", in.size, " x ", RegType(in.dtype),
                      "]\n");
      operand_[i] = absl::StrCat("%sh", i);
      if (in.kind == InstrKind::kRegDefine) {
        // Zeros: a read before the first store must not see what the thread's stack held
        // (another client's values, addresses).
        Declare("void", "llvm.memset.p0.i64", "ptr, i8, i64, i1");
        Line(absl::StrCat("call void @llvm.memset.p0.i64(ptr %sh", i, ", i8 0, i64 ",
                          in.size * std::max(1, ScalarItemSize(in.dtype.scalar)), ", i1 false)"));
      }
      return;
    case InstrKind::kArrayLoad:
    case InstrKind::kArrayStore: {
      const std::string type = RegType(in.dtype);
      const std::string at = Fresh("sp");
      Line(absl::StrCat(at, " = getelementptr ", type, ", ptr ", Op(in.src[0]), ", ", IndexType(),
                        " ", Op(in.src[1])));
      if (in.kind == InstrKind::kArrayLoad) {
        Line(absl::StrCat(self, " = load ", type, ", ptr ", at));
        operand_[i] = self;
      } else {
        Line(absl::StrCat("store ", type, " ", Op(in.src[2]), ", ptr ", at));
      }
      return;
    }
    case InstrKind::kThreadIndex:
    case InstrKind::kBarrier:
    case InstrKind::kWmma:
    case InstrKind::kWmmaInto:
      // Never here: the pipeline runs groups as work-group loops for the CPU (WorkGroupLoops)
      // and writes tensor core instructions out (DecomposeWmma).
      Line(absl::StrCat("unreachable ; ", InstrKindName(in.kind)));
      return;
  }
}

void LlvmIrWriter::Declare(const std::string& ret, const std::string& name,
                           const std::string& params) {
  declarations_.emplace(name, absl::StrCat("declare ", ret, " @", name, "(", params, ")\n"));
}

std::string LlvmIrWriter::Assemble() {
  std::string params;
  for (int slot = 0; slot < p_.buf_count; ++slot) {
    absl::StrAppend(&params, slot ? ", " : "", "ptr noalias %buf", slot);
  }
  for (size_t v = 0; v < p_.var_names.size(); ++v) {
    absl::StrAppend(&params, params.empty() ? "" : ", ", "i64 %var", v);
  }
  absl::StrAppend(&params, params.empty() ? "" : ", ", "ptr %stop");
  std::string out =
      absl::StrCat("; kernel ", p_.name, ": ", p_.proven_accesses, " accesses proven in bounds, ",
                   p_.guarded_accesses, " checked at run time\n");
  absl::StrAppend(&out, "define internal i32 @", p_.name, "_body(", params, ") #0 {\nentry:\n",
                  allocas_, body_, "  ret i32 0\n",
                  checks_stop_ ? absl::StrCat("stopped:\n  ret i32 ", kCpuKernelStopped, "\n") : "",
                  "}\n\n");
  // The entry: a uniform signature over arrays of buffer pointers and variable values, and
  // the stop word.
  absl::StrAppend(&out, "define i32 @", p_.name,
                  "(ptr %bufs, ptr %vals, ptr %stop) #1 {\nentry:\n");
  std::string args;
  for (int slot = 0; slot < p_.buf_count; ++slot) {
    absl::StrAppend(&out, "  %b", slot, ".p = getelementptr ptr, ptr %bufs, i64 ", slot, "\n",
                    "  %b", slot, " = load ptr, ptr %b", slot, ".p\n");
    absl::StrAppend(&args, slot ? ", " : "", "ptr %b", slot);
  }
  for (size_t v = 0; v < p_.var_names.size(); ++v) {
    absl::StrAppend(&out, "  %a", v, ".p = getelementptr i64, ptr %vals, i64 ", v, "\n", "  %a", v,
                    " = load i64, ptr %a", v, ".p\n");
    absl::StrAppend(&args, args.empty() ? "" : ", ", "i64 %a", v);
  }
  absl::StrAppend(&args, args.empty() ? "" : ", ", "ptr %stop");
  absl::StrAppend(&out, "  %r = call i32 @", p_.name, "_body(", args, ")\n  ret i32 %r\n}\n\n");
  absl::StrAppend(&out,
                  "declare i32 @uopd_f64_to_f16(double)\n"
                  "declare i32 @uopd_f64_to_bf16(double)\n"
                  "declare i32 @uopd_f64_to_fp8e4m3(double)\n"
                  "declare i32 @uopd_f64_to_fp8e5m2(double)\n"
                  "declare float @uopd_f16_to_f32(i32)\n"
                  "declare float @uopd_bf16_to_f32(i32)\n"
                  "declare float @uopd_fp8e4m3_to_f32(i32)\n"
                  "declare float @uopd_fp8e5m2_to_f32(i32)\n"
                  "declare i64 @uopd_threefry(i64, i64)\n");
  for (const auto& [name, declaration] : declarations_) out += declaration;
  out += "\n";
  absl::StrAppend(&out, "attributes #0 = { nounwind noinline }\nattributes #1 = { nounwind }\n\n");
  absl::StrAppend(&out, "!", mustprogress_id_, " = !{!\"llvm.loop.mustprogress\"}\n", "!",
                  unlikely_id_, " = !{!\"branch_weights\", i32 1048575, i32 1}\n", metadata_);
  return out;
}

}  // namespace uopd
