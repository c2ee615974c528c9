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

bool LlvmIrWriter::IsVectorInstr(const Instr& in) {
  return in.dtype.count > 1 || in.kind == InstrKind::kHReduce || in.kind == InstrKind::kExtract;
}

std::string LlvmIrWriter::ScalarType(DType d) const {
  d.count = 1;
  return RegType(d);
}

std::string LlvmIrWriter::VecType(const DType& d) const {
  return absl::StrCat("<", d.count, " x ", ScalarType(d), ">");
}

std::string LlvmIrWriter::ElementAlign(const DType& d) {
  return absl::StrCat(std::max(1, ScalarItemSize(d.scalar)));
}

std::string LlvmIrWriter::LaneMask(int from, int count) {
  std::string out = absl::StrCat("<", count, " x i32> <");
  for (int k = 0; k < count; ++k) absl::StrAppend(&out, k ? ", " : "", "i32 ", from + k);
  return out + ">";
}

std::string LlvmIrWriter::Splat(const std::string& scalar, const DType& vector_type) {
  const std::string vt = VecType(vector_type);
  std::string one = Fresh("ins");
  Line(absl::StrCat(one, " = insertelement ", vt, " poison, ", ScalarType(vector_type), " ", scalar,
                    ", i64 0"));
  std::string all = Fresh("spl");
  Line(absl::StrCat(all, " = shufflevector ", vt, " ", one, ", ", vt, " poison, <",
                    vector_type.count, " x i32> zeroinitializer"));
  return all;
}

void LlvmIrWriter::EmitVector(int i, const std::string& self) {
  const Instr& in = p_.instrs[i];
  const DType& d = in.dtype;
  auto src = [&](int k) { return Op(in.src[k]); };
  switch (in.kind) {
    case InstrKind::kConst: {
      std::string lanes;
      for (int k = 0; k < d.count; ++k) {
        Instr lane = in;
        lane.dtype.count = 1;
        absl::StrAppend(&lanes, k ? ", " : "", ScalarType(d), " ", ConstLiteral(lane, k));
      }
      operand_[i] = absl::StrCat("<", lanes, ">");
      return;
    }
    case InstrKind::kBroadcast:
      operand_[i] = Splat(src(0), d);
      return;
    case InstrKind::kBuild: {
      if (EmitStridedLoad(in, self)) {
        operand_[i] = self;
        return;
      }
      std::string v = "poison";
      for (size_t k = 0; k < in.src.size(); ++k) {
        std::string next = k + 1 == in.src.size() ? self : Fresh("bld");
        Line(absl::StrCat(next, " = insertelement ", VecType(d), " ", v, ", ", ScalarType(d), " ",
                          src(k), ", i64 ", k));
        v = next;
      }
      operand_[i] = v;
      return;
    }
    case InstrKind::kExtract:
      Line(absl::StrCat(self, " = extractelement ", VecType(TypeOf(in.src[0])), " ", src(0),
                        ", i64 ", in.lane));
      operand_[i] = self;
      return;
    case InstrKind::kHReduce: {
      // Halving: lanes [0, w/2) op lanes [w/2, w), until one is left.
      DType v = TypeOf(in.src[0]);
      std::string value = src(0);
      while (v.count > 1) {
        const int half = v.count / 2;
        const std::string vt = VecType(v);
        std::string lo = Fresh("lo"), hi = Fresh("hi");
        Line(absl::StrCat(lo, " = shufflevector ", vt, " ", value, ", ", vt, " poison, ",
                          LaneMask(0, half)));
        Line(absl::StrCat(hi, " = shufflevector ", vt, " ", value, ", ", vt, " poison, ",
                          LaneMask(half, half)));
        v.count = half;
        if (half == 1) {
          DType scalar = v;
          std::string a = Fresh("e"), b = Fresh("e");
          Line(absl::StrCat(a, " = extractelement <1 x ", ScalarType(v), "> ", lo, ", i64 0"));
          Line(absl::StrCat(b, " = extractelement <1 x ", ScalarType(v), "> ", hi, ", i64 0"));
          value = Combine(in.op, a, b, scalar, /*reassoc=*/true);
        } else {
          value = Combine(in.op, lo, hi, v, /*reassoc=*/true);
        }
      }
      operand_[i] = value;
      return;
    }
    case InstrKind::kAlu:
      operand_[i] = EmitVectorAlu(in, self);
      return;
    case InstrKind::kCast:
      operand_[i] = EmitVectorCast(in, self);
      return;
    case InstrKind::kBitcast:
      if (VecType(TypeOf(in.src[0])) == VecType(d)) {
        operand_[i] = src(0);
      } else {
        Line(absl::StrCat(self, " = bitcast ", VecType(TypeOf(in.src[0])), " ", src(0), " to ",
                          VecType(d)));
        operand_[i] = self;
      }
      return;
    case InstrKind::kLoad:
      operand_[i] = EmitVectorLoad(in, self);
      return;
    case InstrKind::kStore:
      EmitVectorStore(in);
      return;
    case InstrKind::kAccDefine: {
      absl::StrAppend(&allocas_, "  %acc", i, " = alloca ", VecType(d), "\n");
      Line(absl::StrCat("store ", VecType(d), " ", src(0), ", ptr %acc", i));
      operand_[i] = absl::StrCat("%acc", i);
      return;
    }
    case InstrKind::kAccUpdate: {
      std::string old = Fresh("vacc");
      Line(absl::StrCat(old, " = load ", VecType(d), ", ptr ", src(0)));
      std::string value = src(1);
      if (IsFloat(d.scalar) && in.op == Op::kMul) {
        // As for scalars: a product's values pass an arithmetic fence (see EmitAccUpdate).
        const std::string vt = VecType(d);
        const std::string name =
            absl::StrCat("llvm.arithmetic.fence.v", d.count, IntrinsicSuffix(ScalarType(d)));
        Declare(vt, name, vt);
        std::string fenced = Fresh("fence");
        Line(absl::StrCat(fenced, " = call ", vt, " @", name, "(", vt, " ", value, ")"));
        value = fenced;
      }
      std::string updated = in.op == Op::kMulacc
                                ? FusedMultiplyAdd(value, src(2), old, d, /*reassoc=*/true)
                                : Combine(in.op, old, value, d, /*reassoc=*/true);
      Line(absl::StrCat("store ", VecType(d), " ", updated, ", ptr ", src(0)));
      return;
    }
    case InstrKind::kAccRead:
      Line(absl::StrCat(self, " = load ", VecType(d), ", ptr ", src(0)));
      operand_[i] = self;
      return;
    default:
      operand_[i] = "poison";  // LlvmKeepsVector keeps no other kind
      return;
  }
}

bool LlvmIrWriter::EmitStridedLoad(const Instr& build, const std::string& self) {
  const std::optional<StridedGather> gather = MatchStridedGather(p_, build);
  if (!gather) return false;
  const int n = static_cast<int>(build.src.size());
  const int slot = gather->slot;
  const int64_t stride = gather->stride;
  const int mask = gather->mask;
  const bool masked = mask >= 0;
  DType lane = build.dtype;
  lane.count = 1;
  const int span = static_cast<int>((n - 1) * stride + 1);
  std::string picks;
  for (int k = 0; k < n; ++k) absl::StrAppend(&picks, k ? ", " : "", "i32 ", stride * k);
  if (!masked) {
    const std::string span_type = absl::StrCat("<", span, " x ", MemType(lane), ">");
    const std::string addr = Address(slot, lane, Op(p_.instrs[build.src[0]].src[0]));
    const std::string wide = Fresh("span");
    Line(absl::StrCat(wide, " = load ", span_type, ", ptr ", addr, ", align ", ElementAlign(lane)));
    Line(absl::StrCat(self, " = shufflevector ", span_type, " ", wide, ", ", span_type,
                      " poison, <", n, " x i32> <", picks, ">"));
    return true;
  }
  // Chunks of a power of two lanes, as wide as a masked access may be here (a zmm register
  // where nothing limits it).
  const int limit_bits =
      options_.max_masked_vector_bits > 0 ? options_.max_masked_vector_bits : 512;
  int chunk = 1;
  while (chunk < span && (chunk * 2) * ScalarItemSize(lane.scalar) * 8 <= limit_bits) chunk *= 2;
  int chunks = (span + chunk - 1) / chunk;
  DType chunk_type = lane;
  chunk_type.count = chunk;
  const std::string ct = VecType(chunk_type);
  const std::string name = MaskedIntrinsic("load", chunk_type);
  Declare(ct, name, absl::StrCat("ptr, i32, ", BoolVec(chunk), ", ", ct));
  const std::string lane_masks = MaskOf(mask, n);
  // The first lane's address may lie outside the buffer when that lane is masked off: no
  // inbounds on these GEPs.
  const std::string first = Op(p_.instrs[build.src[0]].src[0]);
  std::vector<std::string> parts;
  for (int c = 0; c < chunks; ++c) {
    std::string positions;  // span position j reads lane j / stride's mask, or false
    for (int j = c * chunk; j < (c + 1) * chunk; ++j) {
      const int from = j % stride == 0 && j / stride < n ? j / stride : n;
      absl::StrAppend(&positions, j > c * chunk ? ", " : "", "i32 ", from);
    }
    const std::string m = Fresh("smask");
    Line(absl::StrCat(m, " = shufflevector ", BoolVec(n), " ", lane_masks, ", ", BoolVec(n),
                      " zeroinitializer, <", chunk, " x i32> <", positions, ">"));
    std::string index = first;
    if (c > 0) {
      index = Fresh("sidx");
      Line(absl::StrCat(index, " = add ", IndexType(), " ", first, ", ", c * chunk));
    }
    const std::string addr = Address(slot, lane, index, /*inbounds=*/false);
    const std::string part = Fresh("spart");
    Line(absl::StrCat(part, " = call ", ct, " @", name, "(ptr ", addr, ", i32 ", ElementAlign(lane),
                      ", ", BoolVec(chunk), " ", m, ", ", ct, " zeroinitializer)"));
    parts.push_back(part);
  }
  // Concatenate the chunks pairwise (an odd one out with zeros) until one vector holds the span.
  for (int width = chunk; parts.size() > 1; width *= 2) {
    if (parts.size() % 2) parts.push_back("zeroinitializer");
    std::string concat;
    for (int j = 0; j < 2 * width; ++j) absl::StrAppend(&concat, j ? ", " : "", "i32 ", j);
    DType half = lane;
    half.count = width;
    std::vector<std::string> next;
    for (size_t j = 0; j < parts.size(); j += 2) {
      const std::string joined = Fresh("sjoin");
      Line(absl::StrCat(joined, " = shufflevector ", VecType(half), " ", parts[j], ", ",
                        VecType(half), " ", parts[j + 1], ", <", 2 * width, " x i32> <", concat,
                        ">"));
      next.push_back(joined);
    }
    parts = std::move(next);
    chunk_type.count = 2 * width;
  }
  const std::string whole = VecType(chunk_type);
  Line(absl::StrCat(self, " = shufflevector ", whole, " ", parts[0], ", ", whole, " poison, <", n,
                    " x i32> <", picks, ">"));
  return true;
}

std::string LlvmIrWriter::EmitVectorAlu(const Instr& in, const std::string& self) {
  const DType& d = in.dtype;
  auto src = [&](int k) { return Op(in.src[k]); };
  const uopd::Op op = in.op;
  if (IsComparison(op)) {
    const DType& od = TypeOf(in.src[0]);
    Line(absl::StrCat(self, " = ", LlvmComparison(op, od), " ", VecType(od), " ", src(0), ", ",
                      src(1)));
    return self;
  }
  if (op == Op::kMulacc) return FusedMultiplyAdd(src(0), src(1), src(2), d, /*reassoc=*/false);
  if (op == Op::kWhere) {
    const std::string t = VecType(d);
    Line(absl::StrCat(self, " = select ", BoolVec(d.count), " ", src(0), ", ", t, " ", src(1), ", ",
                      t, " ", src(2)));
    return self;
  }
  if (op == Op::kNeg) {
    if (IsFloat(d.scalar)) {
      Line(absl::StrCat(self, " = fneg ", VecType(d), " ", src(0)));
    } else if (d.scalar == Scalar::kBool) {
      Line(absl::StrCat(self, " = xor ", VecType(d), " ", src(0), ", ", Splat("true", d)));
    } else {
      Line(absl::StrCat(self, " = sub ", VecType(d), " zeroinitializer, ", src(0)));
    }
    return self;
  }
  if (op == Op::kReciprocal) {
    Line(absl::StrCat(self, " = fdiv ", VecType(d), " ",
                      Splat(FloatLiteral(1.0, d.scalar == Scalar::kFloat64), d), ", ", src(0)));
    return self;
  }
  if (op == Op::kIdiv || op == Op::kMod) {  // by a safe constant (LlvmKeepsVector)
    Line(absl::StrCat(self, " = ", LlvmBinaryInstruction(op, d), " ", VecType(d), " ", src(0), ", ",
                      src(1)));
    return self;
  }
  return Combine(op, src(0), src(1), d, /*reassoc=*/false);
}

std::string LlvmIrWriter::EmitVectorCast(const Instr& in, const std::string& self) {
  const DType& to = in.dtype;
  const DType& from = TypeOf(in.src[0]);
  const std::string v = Op(in.src[0]);
  if (RegType(from) == RegType(to)) return v;
  if (from.scalar == Scalar::kBool) {  // to a float (LlvmKeepsVector): 1.0 where set
    const std::string one = Splat(FloatLiteral(1.0, /*is_double=*/true), to);
    Line(absl::StrCat(self, " = select ", VecType(from), " ", v, ", ", VecType(to), " ", one, ", ",
                      VecType(to), " zeroinitializer"));
    return self;
  }
  std::string inst;
  if (IsFloat(from.scalar) && IsFloat(to.scalar)) {
    inst = from.scalar == Scalar::kFloat64 ? "fptrunc" : "fpext";
  } else if (IsFloat(from.scalar)) {  // to a signed integer, saturating (LlvmKeepsVector)
    const std::string ft = VecType(from), tt = VecType(to);
    const std::string name = absl::StrCat("llvm.fptosi.sat.v", to.count, RegType(to), ".v",
                                          from.count, IntrinsicSuffix(ScalarType(from)));
    Declare(tt, name, ft);
    Line(absl::StrCat(self, " = call ", tt, " @", name, "(", ft, " ", v, ")"));
    return self;
  } else if (IsFloat(to.scalar)) {
    inst = "sitofp";
  } else {
    inst = Bits(from) > Bits(to) ? "trunc" : (IsSigned(from) ? "sext" : "zext");
  }
  Line(absl::StrCat(self, " = ", inst, " ", VecType(from), " ", v, " to ", VecType(to)));
  return self;
}

std::string LlvmIrWriter::MaskOf(int instr, int width) {
  if (TypeOf(instr).count > 1) return Op(instr);
  DType b = DType::Of(Scalar::kBool);
  b.count = width;
  return Splat(Op(instr), b);
}

std::string LlvmIrWriter::MaskedIntrinsic(const char* what, const DType& d) {
  const std::string t = ScalarType(d);
  const std::string suffix = t == "float" ? "f32" : t == "double" ? "f64" : t;
  return absl::StrCat("llvm.masked.", what, ".v", d.count, suffix, ".p0");
}

std::string LlvmIrWriter::EmitVectorLoad(const Instr& in, const std::string& self) {
  const DType& d = in.dtype;
  const std::string vt = VecType(d);
  const bool masked = in.src.size() > 1;
  std::string addr = Address(in.slot, d, Op(in.src[0]), /*inbounds=*/!masked);
  if (masked) {
    const std::string name = MaskedIntrinsic("load", d);
    Declare(vt, name, absl::StrCat("ptr, i32, ", BoolVec(d.count), ", ", vt));
    Line(absl::StrCat(self, " = call ", vt, " @", name, "(ptr ", addr, ", i32 ", ElementAlign(d),
                      ", ", BoolVec(d.count), " ", MaskOf(in.src[1], d.count), ", ", vt,
                      " zeroinitializer)"));
  } else {
    Line(absl::StrCat(self, " = load ", vt, ", ptr ", addr, ", align ", ElementAlign(d)));
  }
  return self;
}

void LlvmIrWriter::EmitVectorStore(const Instr& in) {
  const DType& d = in.dtype;
  const std::string vt = VecType(d);
  const bool masked = in.src.size() > 2;
  std::string addr = Address(in.slot, d, Op(in.src[0]), /*inbounds=*/!masked);
  if (masked) {
    const std::string name = MaskedIntrinsic("store", d);
    Declare("void", name, absl::StrCat(vt, ", ptr, i32, ", BoolVec(d.count)));
    Line(absl::StrCat("call void @", name, "(", vt, " ", Op(in.src[1]), ", ptr ", addr, ", i32 ",
                      ElementAlign(d), ", ", BoolVec(d.count), " ", MaskOf(in.src[2], d.count),
                      ")"));
  } else {
    Line(absl::StrCat("store ", vt, " ", Op(in.src[1]), ", ptr ", addr, ", align ",
                      ElementAlign(d)));
  }
}

}  // namespace uopd
