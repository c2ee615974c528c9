#include "backends/cpu/llvm_renderer.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/codegen/const_value.h"
#include "core/codegen/cpu_lowering.h"
#include "core/codegen/devectorize.h"
#include "core/codegen/fuse_multiply_adds.h"
#include "core/codegen/legalize.h"
#include "core/codegen/program_spec_builder.h"
#include "core/ir/value_range.h"
#include "core/util/kernel_support.h"
#include "core/util/status_macros.h"

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
    default:
      return "uopd_fp8e5m2_to_f32";
  }
}

class IrWriter {
 public:
  IrWriter(const LinearProgram& program, const LlvmRendererOptions& options)
      : p_(program), options_(options) {}

  std::string Render() {
    operand_.resize(p_.instrs.size());
    FindInnermostLoops();
    FindBranchedLoads();
    FindRegisterTileLoops();
    for (size_t i = 0; i < p_.instrs.size(); ++i) EmitInstr(static_cast<int>(i));
    if (grid_loop_ >= 0) EndLoop(grid_loop_);
    return Assemble();
  }

 private:
  // ---- Types ----------------------------------------------------------------------------------

  std::string IndexType() const { return p_.index_bits == 32 ? "i32" : "i64"; }

  // The type a value lives in while computed.
  std::string RegType(const DType& d) const {
    switch (d.scalar) {
      case Scalar::kBool:
        return "i1";
      case Scalar::kIndex:
        return IndexType();
      case Scalar::kInt8:
      case Scalar::kUint8:
      case Scalar::kFp8E4M3:
      case Scalar::kFp8E5M2:
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
  // The type a value is stored as in a buffer: bools are one byte.
  std::string MemType(const DType& d) const {
    return d.scalar == Scalar::kBool ? "i8" : RegType(d);
  }
  // The type arithmetic happens in: emulated floats compute in float.
  std::string ComputeType(const DType& d) const {
    return IsNarrowFloat(d.scalar) ? "float" : RegType(d);
  }
  static bool IsFloatCompute(const DType& d) { return IsFloat(d.scalar); }
  static bool IsSigned(const DType& d) { return IsInt(d.scalar) && !IsUnsigned(d.scalar); }
  int Bits(const DType& d) const {
    if (d.scalar == Scalar::kIndex) return p_.index_bits;
    if (d.scalar == Scalar::kBool) return 1;
    return ScalarItemSize(d.scalar) * 8;
  }

  // ---- Output helpers -------------------------------------------------------------------------

  std::string Fresh(absl::string_view hint) { return absl::StrCat("%", hint, ".", counter_++); }
  void Line(absl::string_view text) { absl::StrAppend(&body_, "  ", text, "\n"); }
  void Label(absl::string_view label) { absl::StrAppend(&body_, label, ":\n"); }
  const std::string& Op(int i) const { return operand_[i]; }
  const DType& TypeOf(int i) const { return p_.instrs[i].dtype; }

  static std::string FloatLiteral(double v, bool is_double) {
    if (!is_double) v = static_cast<double>(static_cast<float>(v));
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return absl::StrFormat("0x%016X", bits);
  }

  std::string ConstLiteral(const Instr& in, int lane = 0) const {
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

  // Widens an emulated float value to float; other values pass through.
  std::string ToCompute(const std::string& value, const DType& d) {
    if (!IsNarrowFloat(d.scalar)) return value;
    std::string wide = Fresh("w");
    Line(absl::StrCat(wide, " = zext ", RegType(d), " ", value, " to i32"));
    std::string f = Fresh("f");
    Line(absl::StrCat(f, " = call float @", WidenFn(d.scalar), "(i32 ", wide, ")"));
    return f;
  }
  // Rounds a float (or double) result back to an emulated float's bits.
  std::string FromCompute(const std::string& value, const std::string& from_type, const DType& d) {
    if (!IsNarrowFloat(d.scalar)) return value;
    std::string dbl = value;
    if (from_type == "float") {
      dbl = Fresh("d");
      Line(absl::StrCat(dbl, " = fpext float ", value, " to double"));
    }
    std::string bits = Fresh("b");
    Line(absl::StrCat(bits, " = call i32 @", NarrowFn(d.scalar), "(double ", dbl, ")"));
    std::string out = Fresh("h");
    Line(absl::StrCat(out, " = trunc i32 ", bits, " to ", RegType(d)));
    return out;
  }

  // ---- Instructions ---------------------------------------------------------------------------

  void EmitInstr(int i) {
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
    }
  }

  // ---- Vectors ---------------------------------------------------------------------------------
  // The vector instructions LlvmKeepsVector lets through (Devectorize rewrote the others).

  static bool IsVectorInstr(const Instr& in) {
    return in.dtype.count > 1 || in.kind == InstrKind::kHReduce || in.kind == InstrKind::kExtract;
  }
  std::string ScalarType(DType d) const {
    d.count = 1;
    return RegType(d);
  }
  std::string VecType(const DType& d) const {
    return absl::StrCat("<", d.count, " x ", ScalarType(d), ">");
  }
  std::string BoolVec(int width) const { return absl::StrCat("<", width, " x i1>"); }
  // Vector accesses are aligned to their element only.
  static std::string ElementAlign(const DType& d) {
    return absl::StrCat(std::max(1, ScalarItemSize(d.scalar)));
  }
  // "<4 x i32> <i32 0, i32 1, ...>"-style lane list of a mask for shufflevector.
  static std::string LaneMask(int from, int count) {
    std::string out = absl::StrCat("<", count, " x i32> <");
    for (int k = 0; k < count; ++k) absl::StrAppend(&out, k ? ", " : "", "i32 ", from + k);
    return out + ">";
  }
  // A scalar operand repeated in every lane.
  std::string Splat(const std::string& scalar, const DType& vector_type) {
    const std::string vt = VecType(vector_type);
    std::string one = Fresh("ins");
    Line(absl::StrCat(one, " = insertelement ", vt, " poison, ", ScalarType(vector_type), " ",
                      scalar, ", i64 0"));
    std::string all = Fresh("spl");
    Line(absl::StrCat(all, " = shufflevector ", vt, " ", one, ", ", vt, " poison, <",
                      vector_type.count, " x i32> zeroinitializer"));
    return all;
  }
  // a op b on vectors of `d` (ADD, SUB, MUL, MAX, AND, OR, XOR, FDIV).
  std::string VectorCombine(uopd::Op op, const std::string& a, const std::string& b, const DType& d,
                            bool reassoc) {
    const std::string t = VecType(d);
    const bool fl = IsFloat(d.scalar);
    const bool is_bool = d.scalar == Scalar::kBool;
    const std::string fm = reassoc ? "reassoc " : "";
    std::string r = Fresh("vr");
    switch (op) {
      case Op::kAdd:
        Line(absl::StrCat(r, " = ",
                          is_bool ? "or "
                          : fl    ? "fadd " + fm
                                  : "add ",
                          t, " ", a, ", ", b));
        break;
      case Op::kSub:
        Line(absl::StrCat(r, " = ", fl ? "fsub " : "sub ", t, " ", a, ", ", b));
        break;
      case Op::kMul:
        Line(absl::StrCat(r, " = ",
                          is_bool ? "and "
                          : fl    ? "fmul " + fm
                                  : "mul ",
                          t, " ", a, ", ", b));
        break;
      case Op::kFdiv:
        Line(absl::StrCat(r, " = fdiv ", t, " ", a, ", ", b));
        break;
      case Op::kMax: {
        std::string c = Fresh("vc");
        if (fl)
          Line(absl::StrCat(c, " = fcmp ogt ", t, " ", a, ", ", b));
        else if (is_bool)
          Line(absl::StrCat(c, " = icmp ugt ", t, " ", a, ", ", b));
        else
          Line(absl::StrCat(c, " = icmp ", IsSigned(d) ? "sgt " : "ugt ", t, " ", a, ", ", b));
        Line(absl::StrCat(r, " = select ", BoolVec(d.count), " ", c, ", ", t, " ", a, ", ", t, " ",
                          b));
        break;
      }
      case Op::kAnd:
      case Op::kOr:
      case Op::kXor:
        Line(absl::StrCat(r, " = ",
                          op == Op::kAnd  ? "and "
                          : op == Op::kOr ? "or "
                                          : "xor ",
                          t, " ", a, ", ", b));
        break;
      default:
        break;
    }
    return r;
  }

  void EmitVector(int i, const std::string& self) {
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
            value = VectorCombine(in.op, lo, hi, v, /*reassoc=*/true);
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
                                  : VectorCombine(in.op, old, value, d, /*reassoc=*/true);
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

  // idx[k] - idx[0] for each lane k of integer vector `instr`, when those are constants: a
  // vector of lane numbers scaled and shifted by uniform amounts (the indices of a strided
  // access); nullopt otherwise.
  std::optional<std::vector<int64_t>> LaneOffsets(int instr) {
    const Instr& in = p_.instrs[instr];
    const int n = std::max(1, in.dtype.count);
    auto uniform = [&](int k) -> std::optional<int64_t> {  // one value in every lane
      const Instr& c = p_.instrs[k];
      const Instr& scalar = c.kind == InstrKind::kBroadcast ? p_.instrs[c.src[0]] : c;
      if (scalar.kind != InstrKind::kConst) return std::nullopt;
      const int64_t v = DecodeConst(scalar, p_.index_bits, 0).as_int();
      for (int lane = 1; lane < std::max(1, scalar.dtype.count); ++lane) {
        if (DecodeConst(scalar, p_.index_bits, lane).as_int() != v) return std::nullopt;
      }
      return v;
    };
    switch (in.kind) {
      case InstrKind::kBroadcast:
        return std::vector<int64_t>(n, 0);
      case InstrKind::kConst: {
        std::vector<int64_t> out(n);
        const int64_t first = DecodeConst(in, p_.index_bits, 0).as_int();
        for (int k = 0; k < n; ++k) out[k] = DecodeConst(in, p_.index_bits, k).as_int() - first;
        return out;
      }
      case InstrKind::kAlu: {
        if (in.src.size() != 2) return std::nullopt;
        if (in.op == Op::kAdd || in.op == Op::kSub) {
          auto a = LaneOffsets(in.src[0]), b = LaneOffsets(in.src[1]);
          if (!a || !b) return std::nullopt;
          for (int k = 0; k < n; ++k) (*a)[k] += in.op == Op::kAdd ? (*b)[k] : -(*b)[k];
          return a;
        }
        // x * c, c * x or x << c: x's offsets scaled.
        auto scaled = [&](int x, int64_t factor) {
          auto a = LaneOffsets(x);
          if (a) {
            for (int64_t& o : *a) o *= factor;
          }
          return a;
        };
        if (in.op == Op::kMul) {
          if (auto c = uniform(in.src[1])) return scaled(in.src[0], *c);
          if (auto c = uniform(in.src[0])) return scaled(in.src[1], *c);
        }
        if (in.op == Op::kShl) {
          auto c = uniform(in.src[1]);
          if (c && *c >= 0 && *c <= 30) return scaled(in.src[0], int64_t{1} << *c);
        }
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  // A build of loads of one buffer at idx0, idx0 + s, ..., idx0 + (n-1) s (s = 2..4, the lanes
  // of one index vector: a strided access) as loads of the span and a shuffle, as LLVM's loop
  // vectorizer spells interleaved accesses: lane by lane, each lane was a load and an insert (a
  // stride-2 max pool ran 2-4x tinygrad's time). Unmasked, the span lies between the first and
  // last lanes, which are loaded anyway, so it reads nothing outside the buffer. Masked (a padded
  // stride-2 convolution's input row), the span is read as masked loads of at most
  // max_masked_vector_bits each whose lanes are the gather's own masks at its own positions, so
  // again nothing is read that the lanes one by one would not read.
  struct StridedGather {
    int slot;
    int64_t stride;
    int mask;  // LanesMask's instruction; -1 when the lanes are unmasked
  };

  // Whether `build` is a gather EmitStridedLoad spells as span loads, and how.
  std::optional<StridedGather> MatchStridedGather(const Instr& build) {
    const int n = static_cast<int>(build.src.size());
    if (build.kind != InstrKind::kBuild || n < 2 || build.dtype.scalar == Scalar::kBool ||
        IsNarrowFloat(build.dtype.scalar)) {
      return std::nullopt;
    }
    const bool masked = IsMaskedAccess(p_.instrs[build.src[0]]);
    const int mask = masked ? LanesMask(p_, build) : -1;
    if (masked && mask < 0) return std::nullopt;
    int vector = -1, slot = -1;
    for (int k = 0; k < n; ++k) {
      const Instr& load = p_.instrs[build.src[k]];
      if (load.kind != InstrKind::kLoad || IsMaskedAccess(load) != masked) return std::nullopt;
      if (slot >= 0 && load.slot != slot) return std::nullopt;
      slot = load.slot;
      const Instr& index = p_.instrs[load.src[0]];
      if (index.kind != InstrKind::kExtract || index.lane != k) return std::nullopt;
      if (vector >= 0 && index.src[0] != vector) return std::nullopt;
      vector = index.src[0];
    }
    if (p_.instrs[vector].dtype.count != n) return std::nullopt;
    const std::optional<std::vector<int64_t>> offsets = LaneOffsets(vector);
    if (!offsets) return std::nullopt;
    const int64_t stride = (*offsets)[1];
    if (stride < 2 || stride > 4) return std::nullopt;
    for (int k = 0; k < n; ++k) {
      if ((*offsets)[k] != stride * k) return std::nullopt;
    }
    return StridedGather{slot, stride, mask};
  }

  bool EmitStridedLoad(const Instr& build, const std::string& self) {
    const std::optional<StridedGather> gather = MatchStridedGather(build);
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
      Line(absl::StrCat(wide, " = load ", span_type, ", ptr ", addr, ", align ",
                        ElementAlign(lane)));
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
      Line(absl::StrCat(part, " = call ", ct, " @", name, "(ptr ", addr, ", i32 ",
                        ElementAlign(lane), ", ", BoolVec(chunk), " ", m, ", ", ct,
                        " zeroinitializer)"));
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

  std::string EmitVectorAlu(const Instr& in, const std::string& self) {
    const DType& d = in.dtype;
    auto src = [&](int k) { return Op(in.src[k]); };
    const uopd::Op op = in.op;
    if (IsComparison(op)) {
      const DType& od = TypeOf(in.src[0]);
      const std::string t = VecType(od);
      std::string pred;
      if (IsFloat(od.scalar)) {
        pred = op == Op::kCmplt ? "fcmp olt" : op == Op::kCmpne ? "fcmp une" : "fcmp oeq";
      } else {
        bool s = IsSigned(od);
        pred = op == Op::kCmplt   ? (s ? "icmp slt" : "icmp ult")
               : op == Op::kCmpne ? "icmp ne"
                                  : "icmp eq";
      }
      Line(absl::StrCat(self, " = ", pred, " ", t, " ", src(0), ", ", src(1)));
      return self;
    }
    if (op == Op::kMulacc) return FusedMultiplyAdd(src(0), src(1), src(2), d, /*reassoc=*/false);
    if (op == Op::kWhere) {
      const std::string t = VecType(d);
      Line(absl::StrCat(self, " = select ", BoolVec(d.count), " ", src(0), ", ", t, " ", src(1),
                        ", ", t, " ", src(2)));
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
      const bool s = IsSigned(d);
      Line(absl::StrCat(self, " = ",
                        op == Op::kIdiv ? (s ? "sdiv " : "udiv ") : (s ? "srem " : "urem "),
                        VecType(d), " ", src(0), ", ", src(1)));
      return self;
    }
    return VectorCombine(op, src(0), src(1), d, /*reassoc=*/false);
  }

  std::string EmitVectorCast(const Instr& in, const std::string& self) {
    const DType& to = in.dtype;
    const DType& from = TypeOf(in.src[0]);
    const std::string v = Op(in.src[0]);
    if (RegType(from) == RegType(to)) return v;
    if (from.scalar == Scalar::kBool) {  // to a float (LlvmKeepsVector): 1.0 where set
      const std::string one = Splat(FloatLiteral(1.0, /*is_double=*/true), to);
      Line(absl::StrCat(self, " = select ", VecType(from), " ", v, ", ", VecType(to), " ", one,
                        ", ", VecType(to), " zeroinitializer"));
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

  // A vector mask from a vector or scalar bool operand.
  std::string MaskOf(int instr, int width) {
    if (TypeOf(instr).count > 1) return Op(instr);
    DType b = DType::Of(Scalar::kBool);
    b.count = width;
    return Splat(Op(instr), b);
  }

  // "llvm.masked.load.v16f32.p0": named for the register type (emulated floats are integers).
  std::string MaskedIntrinsic(const char* what, const DType& d) {
    const std::string t = ScalarType(d);
    const std::string suffix = t == "float" ? "f32" : t == "double" ? "f64" : t;
    return absl::StrCat("llvm.masked.", what, ".v", d.count, suffix, ".p0");
  }

  std::string EmitVectorLoad(const Instr& in, const std::string& self) {
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

  void EmitVectorStore(const Instr& in) {
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

  // Which loops check the stop word. A loop nest of constant bounds doing at most kCpuStopChunk
  // iterations in all needs no check of its own (the loops around it check); of the others,
  // innermost loops run in chunks (below) and outer loops check once per iteration.
  void FindInnermostLoops() {
    const size_t n = p_.instrs.size();
    innermost_.assign(n, false);
    unchecked_.assign(n, false);
    struct Open {
      int loop;
      int64_t inner_work = 0;  // iterations of the loops inside, in all
      bool bounded = true;
    };
    std::vector<Open> open;
    for (size_t i = 0; i < n; ++i) {
      const Instr& in = p_.instrs[i];
      if (in.kind == InstrKind::kLoopBegin || in.kind == InstrKind::kGlobalIndex) {
        if (!open.empty()) innermost_[open.back().loop] = false;
        innermost_[i] = true;
        open.push_back({static_cast<int>(i)});
        if (in.kind == InstrKind::kGlobalIndex) open.back().bounded = false;
      } else if (in.kind == InstrKind::kLoopEnd && !open.empty()) {
        Open done = open.back();
        open.pop_back();
        const Instr& loop = p_.instrs[done.loop];
        const Instr& start = p_.instrs[loop.src[0]];
        const Instr& end = p_.instrs[loop.src[1]];
        bool bounded =
            done.bounded && start.kind == InstrKind::kConst && end.kind == InstrKind::kConst;
        int64_t work = 0;
        if (bounded) {
          // Saturates: anything past the chunk is as good as unbounded.
          const int64_t trip = std::max<int64_t>(0, end.arg.i - start.arg.i);
          const int64_t per_iteration = std::min(done.inner_work, kCpuStopChunk) + 1;
          work = trip > kCpuStopChunk ? kCpuStopChunk + 1
                                      : std::min(trip * per_iteration, kCpuStopChunk + 1);
          bounded = work <= kCpuStopChunk;
        }
        unchecked_[done.loop] = bounded;
        if (bounded) innermost_[done.loop] = false;
        if (!open.empty()) {
          open.back().bounded &= bounded;
          open.back().inner_work = std::min(open.back().inner_work + work, kCpuStopChunk + 1);
        }
      }
    }
  }

  // Branches to the kernel's early return when the stop word is set (rarely taken).
  void CheckStop(int i) {
    Line(absl::StrCat("%v", i, ".stop = load atomic i32, ptr %stop monotonic, align 4"));
    Line(absl::StrCat("%v", i, ".halt = icmp ne i32 %v", i, ".stop, 0"));
    Line(absl::StrCat("br i1 %v", i, ".halt, label %stopped, label %loop", i, ".on, !prof !",
                      unlikely_id_));
    Label(absl::StrCat("loop", i, ".on"));
    checks_stop_ = true;
  }

  // for (x = start; x < end; ++x), with x in an alloca that mem2reg promotes. An innermost loop
  // runs in chunks of kCpuStopChunk iterations with the stop check between chunks, so its own
  // body stays a plain counted loop the vectorizer takes; an outer loop checks every iteration.
  // Range starts are never negative, so end - chunk start does not overflow.
  std::string BeginLoop(int i, const std::string& start, const std::string& end) {
    const std::string self = absl::StrCat("%v", i);
    std::string t = IndexType();
    absl::StrAppend(&allocas_, "  %v", i, ".addr = alloca ", t, "\n");
    std::string limit = end;
    if (innermost_[i]) {
      absl::StrAppend(&allocas_, "  %v", i, ".chunk.addr = alloca ", t, "\n");
      Line(absl::StrCat("store ", t, " ", start, ", ptr %v", i, ".chunk.addr"));
      Line(absl::StrCat("br label %loop", i, ".chunk"));
      Label(absl::StrCat("loop", i, ".chunk"));
      Line(absl::StrCat("%v", i, ".c = load ", t, ", ptr %v", i, ".chunk.addr"));
      Line(absl::StrCat("%v", i, ".more = icmp slt ", t, " %v", i, ".c, ", end));
      Line(absl::StrCat("br i1 %v", i, ".more, label %loop", i, ".check, label %loop", i, ".exit"));
      Label(absl::StrCat("loop", i, ".check"));
      CheckStop(i);
      Line(absl::StrCat("%v", i, ".left = sub nsw ", t, " ", end, ", %v", i, ".c"));
      Line(absl::StrCat("%v", i, ".full = icmp sgt ", t, " %v", i, ".left, ", kCpuStopChunk));
      Line(absl::StrCat("%v", i, ".step = select i1 %v", i, ".full, ", t, " ", kCpuStopChunk, ", ",
                        t, " %v", i, ".left"));
      Line(absl::StrCat("%v", i, ".cend = add nsw ", t, " %v", i, ".c, %v", i, ".step"));
      limit = absl::StrCat("%v", i, ".cend");
      Line(absl::StrCat("store ", t, " %v", i, ".c, ptr %v", i, ".addr"));
    } else {
      Line(absl::StrCat("store ", t, " ", start, ", ptr %v", i, ".addr"));
    }
    Line(absl::StrCat("br label %loop", i, ".cond"));
    Label(absl::StrCat("loop", i, ".cond"));
    Line(absl::StrCat(self, " = load ", t, ", ptr %v", i, ".addr"));
    Line(absl::StrCat("%v", i, ".go = icmp slt ", t, " ", self, ", ", limit));
    Line(absl::StrCat("br i1 %v", i, ".go, label %loop", i, ".body, label %loop", i,
                      innermost_[i] ? ".chunk.next" : ".exit"));
    Label(absl::StrCat("loop", i, ".body"));
    if (!innermost_[i] && !unchecked_[i]) CheckStop(i);
    return self;
  }

  void EndLoop(int loop) {
    std::string t = IndexType();
    Line(absl::StrCat("%v", loop, ".next = add nsw ", t, " %v", loop, ", 1"));
    Line(absl::StrCat("store ", t, " %v", loop, ".next, ptr %v", loop, ".addr"));
    Line(absl::StrCat("br label %loop", loop, ".cond, !llvm.loop !",
                      LoopMetadata(/*vectorize=*/!tile_loop_[loop])));
    if (innermost_[loop]) {
      Label(absl::StrCat("loop", loop, ".chunk.next"));
      Line(absl::StrCat("store ", t, " %v", loop, ".cend, ptr %v", loop, ".chunk.addr"));
      Line(absl::StrCat("br label %loop", loop, ".chunk"));
    }
    Label(absl::StrCat("loop", loop, ".exit"));
  }

  int LoopMetadata(bool vectorize) {
    int id = next_metadata_++;
    if (vectorize) {
      absl::StrAppend(&metadata_, "!", id, " = distinct !{!", id, ", !", mustprogress_id_, "}\n");
    } else {
      if (no_vectorize_id_ < 0) {
        no_vectorize_id_ = next_metadata_++;
        absl::StrAppend(&metadata_, "!", no_vectorize_id_,
                        " = !{!\"llvm.loop.vectorize.enable\", i1 false}\n");
      }
      absl::StrAppend(&metadata_, "!", id, " = distinct !{!", id, ", !", mustprogress_id_, ", !",
                      no_vectorize_id_, "}\n");
    }
    return id;
  }

  // Innermost loops that update more scalar accumulators than options_.max_widened_accumulators:
  // a register tile (a convolution's 4x4 outputs times a 4-wide window, say). LLVM's loop
  // vectorizer would widen each accumulator into a vector of its own, one per lane of the loop
  // counter, gathering the operands the counter strides over; past the register file that
  // spills every accumulator every iteration. Left alone, the SLP vectorizer packs one
  // iteration's independent multiply-adds into a few vectors instead, as clang does with
  // tinygrad's C (whose conditional loads keep the loop vectorizer out).
  void FindRegisterTileLoops() {
    tile_loop_.assign(p_.instrs.size(), false);
    if (options_.max_widened_accumulators <= 0) return;
    struct Open {
      int loop;
      bool has_inner = false;
      absl::flat_hash_set<int> updated;  // scalar accumulators
    };
    std::vector<Open> open;
    for (size_t i = 0; i < p_.instrs.size(); ++i) {
      const Instr& in = p_.instrs[i];
      if (in.kind == InstrKind::kLoopBegin) {
        if (!open.empty()) open.back().has_inner = true;
        open.push_back({static_cast<int>(i)});
      } else if (in.kind == InstrKind::kAccUpdate && in.dtype.count == 1 && !open.empty()) {
        open.back().updated.insert(in.src[0]);
      } else if (in.kind == InstrKind::kLoopEnd && !open.empty()) {
        const Open& done = open.back();
        tile_loop_[done.loop] = !done.has_inner && static_cast<int>(done.updated.size()) >
                                                       options_.max_widened_accumulators;
        open.pop_back();
      }
    }
  }

  std::string EmitAccUpdate(const Instr& in) {
    const DType& d = in.dtype;
    std::string acc = Op(in.src[0]);
    std::string old = Fresh("acc");
    Line(absl::StrCat(old, " = load ", RegType(d), ", ptr ", acc));
    // Reassociation is allowed for the accumulation alone, which lets LLVM vectorize reductions;
    // tinygrad's own optimizer reorders reductions the same way (upcast, unroll). A product's
    // values pass an arithmetic fence first: `reassoc` on a multiplication also licenses
    // rewriting the factors (pow(c, x) * pow(c, y) -> pow(c, x + y) turned a product of NaNs into
    // 0). The fence costs vectorization, which sums (the reductions that matter for speed) keep.
    std::string value = Op(in.src[1]);
    // (Emulated floats reach the accumulation through conversion calls, which no rewrite sees
    // through.)
    if ((d.scalar == Scalar::kFloat32 || d.scalar == Scalar::kFloat64) && in.op == Op::kMul) {
      const std::string t = RegType(d);
      std::string fenced = Fresh("fence");
      Declare(t, absl::StrCat("llvm.arithmetic.fence.", IntrinsicSuffix(t)), t);
      Line(absl::StrCat(fenced, " = call ", t, " @llvm.arithmetic.fence.", IntrinsicSuffix(t), "(",
                        t, " ", value, ")"));
      value = fenced;
    }
    std::string updated = in.op == Op::kMulacc
                              ? FusedMultiplyAdd(value, Op(in.src[2]), old, d, /*reassoc=*/true)
                              : Combine(in.op, old, value, d, /*reassoc=*/true);
    Line(absl::StrCat("store ", RegType(d), " ", updated, ", ptr ", acc));
    return updated;
  }

  // a op b for the reduction ops (ADD, MUL, MAX) and every binary ALU op.
  std::string Combine(uopd::Op op, const std::string& a_in, const std::string& b_in, const DType& d,
                      bool reassoc) {
    std::string a = ToCompute(a_in, d), b = ToCompute(b_in, d);
    std::string t = ComputeType(d);
    std::string r = Fresh("r");
    bool fl = IsFloatCompute(d);
    bool is_bool = d.scalar == Scalar::kBool;
    // `reassoc` alone: it is what vectorizing a reduction needs; `nsz` would also let LLVM drop
    // the sum's starting +0.0, so a row of -0.0 summed to -0.0.
    std::string fm = reassoc ? "reassoc " : "";
    switch (op) {
      case Op::kAdd:
        if (is_bool)
          Line(absl::StrCat(r, " = or i1 ", a, ", ", b));
        else
          Line(absl::StrCat(r, " = ", fl ? "fadd " + fm : "add ", t, " ", a, ", ", b));
        break;
      case Op::kSub:
        Line(absl::StrCat(r, " = ", fl ? "fsub " : "sub ", t, " ", a, ", ", b));
        break;
      case Op::kMul:
        if (is_bool)
          Line(absl::StrCat(r, " = and i1 ", a, ", ", b));
        else
          Line(absl::StrCat(r, " = ", fl ? "fmul " + fm : "mul ", t, " ", a, ", ", b));
        break;
      case Op::kMax: {
        std::string c = Fresh("c");
        if (fl)
          Line(absl::StrCat(c, " = fcmp ogt ", t, " ", a, ", ", b));
        else
          Line(absl::StrCat(c, " = icmp ", IsSigned(d) ? "sgt " : "ugt ", t, " ", a, ", ", b));
        Line(absl::StrCat(r, " = select i1 ", c, ", ", t, " ", a, ", ", t, " ", b));
        break;
      }
      case Op::kFdiv:
        Line(absl::StrCat(r, " = fdiv ", t, " ", a, ", ", b));
        break;
      case Op::kPow:
        Declare(t, absl::StrCat("llvm.pow.", IntrinsicSuffix(t)), absl::StrCat(t, ", ", t));
        Line(absl::StrCat(r, " = call ", t, " @llvm.pow.", IntrinsicSuffix(t), "(", t, " ", a, ", ",
                          t, " ", b, ")"));
        break;
      case Op::kIdiv:
      case Op::kMod:
        return Divide(op, a, b, d);
      case Op::kAnd:
      case Op::kOr:
      case Op::kXor:
        Line(absl::StrCat(r, " = ",
                          op == Op::kAnd  ? "and "
                          : op == Op::kOr ? "or "
                                          : "xor ",
                          t, " ", a, ", ", b));
        break;
      default:
        break;
    }
    return FromCompute(r, t, d);
  }

  // Records the declaration of an LLVM intrinsic the body calls.
  void Declare(const std::string& ret, const std::string& name, const std::string& params) {
    declarations_.emplace(name, absl::StrCat("declare ", ret, " @", name, "(", params, ")\n"));
  }

  static std::string IntrinsicSuffix(const std::string& t) { return t == "double" ? "f64" : "f32"; }

  // a*b+c for float32/float64 scalars or vectors, rounded once where the target has an FMA
  // (llvm.fmuladd): only FuseMultiplyAdds makes these, for requests that allow it.
  std::string FusedMultiplyAdd(const std::string& a, const std::string& b, const std::string& c,
                               const DType& d, bool reassoc) {
    const std::string t = d.count > 1 ? VecType(d) : RegType(d);
    const std::string suffix = d.count > 1
                                   ? absl::StrCat("v", d.count, IntrinsicSuffix(ScalarType(d)))
                                   : IntrinsicSuffix(t);
    const std::string name = absl::StrCat("llvm.fmuladd.", suffix);
    Declare(t, name, absl::StrCat(t, ", ", t, ", ", t));
    std::string r = Fresh("fma");
    Line(absl::StrCat(r, " = call ", reassoc ? "reassoc " : "", t, " @", name, "(", t, " ", a, ", ",
                      t, " ", b, ", ", t, " ", c, ")"));
    return r;
  }

  // IDIV/MOD: Legalize made every divisor safe (never 0, never -1 for signed types).
  std::string Divide(uopd::Op op, const std::string& a, const std::string& b, const DType& d) {
    const bool is_signed = IsSigned(d) || d.scalar == Scalar::kIndex;
    std::string r = Fresh("q");
    Line(absl::StrCat(
        r, " = ",
        op == Op::kIdiv ? (is_signed ? "sdiv " : "udiv ") : (is_signed ? "srem " : "urem "),
        RegType(d), " ", a, ", ", b));
    return r;
  }

  std::string EmitAlu(const Instr& in, const std::string& self) {
    const DType& d = in.dtype;
    auto src = [&](int k) { return Op(in.src[k]); };
    auto src_type = [&](int k) { return TypeOf(in.src[k]); };
    uopd::Op op = in.op;
    if (IsComparison(op)) {
      const DType& od = src_type(0);
      std::string a = ToCompute(src(0), od), b = ToCompute(src(1), od);
      std::string t = ComputeType(od);
      std::string pred;
      if (IsFloatCompute(od)) {
        pred = op == Op::kCmplt ? "fcmp olt" : op == Op::kCmpne ? "fcmp une" : "fcmp oeq";
      } else {
        bool s = IsSigned(od);
        pred = op == Op::kCmplt   ? (s ? "icmp slt" : "icmp ult")
               : op == Op::kCmpne ? "icmp ne"
                                  : "icmp eq";
      }
      Line(absl::StrCat(self, " = ", pred, " ", t, " ", a, ", ", b));
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
      std::string inst = op == Op::kShl ? "shl" : (IsSigned(d) ? "ashr" : "lshr");
      Line(absl::StrCat(self, " = ", inst, " ", RegType(d), " ", src(0), ", ", src(1)));
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

  // An integer value resized to another integer dtype (sign-extending signed sources).
  std::string Resize(const std::string& v, const DType& from, const DType& to) {
    int fb = Bits(from), tb = Bits(to);
    if (fb == tb) return v;
    std::string r = Fresh("rs");
    std::string inst = fb > tb ? "trunc" : (IsSigned(from) ? "sext" : "zext");
    Line(absl::StrCat(r, " = ", inst, " ", RegType(from), " ", v, " to ", RegType(to)));
    return r;
  }

  // An unsigned integer to `target` without `uitofp`: LLVM 19's x86 backend miscompiles vector
  // `uitofp` of sign-extended values (a uint64 cast from int8 -32 came out 224.0 in vectorized
  // loops of 7 or 37 elements). Narrow values widen to i64 and convert signed (exactly); a 64-bit
  // one above 2^63 halves with its low bit kept (round to odd), converts, and doubles: correctly
  // rounded.
  std::string UnsignedToFloat(const std::string& v, const DType& from, const std::string& target) {
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
    Line(absl::StrCat(r, " = select i1 ", big, ", ", target, " ", big_f, ", ", target, " ",
                      small_f));
    return r;
  }

  std::string EmitCast(int src_index, const DType& to, const std::string& self) {
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

  std::string EmitBitcast(int src_index, const DType& to, const std::string& self) {
    const DType& from = TypeOf(src_index);
    std::string v = Op(src_index);
    std::string ft = RegType(from), tt = RegType(to);  // one width (Legalize)
    if (ft == tt) return v;
    Line(absl::StrCat(self, " = bitcast ", ft, " ", v, " to ", tt));
    return self;
  }

  // `inbounds` only where the address is one that is accessed: a masked vector access's first
  // lane may be masked off and point before the buffer (a padded row's -22 in
  // mov_pad_4d_2x3x4x5), and an inbounds GEP outside its object is poison, which LLVM used to
  // drop the mask's other conditions (wrong elements on AVX2).
  std::string Address(int slot, const DType& d, const std::string& index, bool inbounds = true) {
    std::string addr = Fresh("p");
    Line(absl::StrCat(addr, " = getelementptr ", inbounds ? "inbounds " : "", MemType(d),
                      ", ptr %buf", slot, ", ", IndexType(), " ", index));
    return addr;
  }

  std::string EmitLoad(const Instr& in, int i, const std::string& self) {
    const DType& d = in.dtype;
    std::string zero = IsFloat(d.scalar) && !IsNarrowFloat(d.scalar) ? "0.0" : "0";
    std::string index = Op(in.src[0]);
    bool masked = in.src.size() > 1;
    if (masked && branched_[i]) return EmitBranchedLoad(in, self, zero);
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

  // A load behind a branch on its mask, as a C compiler spells tinygrad's `m ? *p : 0`: its
  // address stays an affine function of the loop counters (no select on the index), so LLVM
  // folds constant offsets into the addressing and keeps few index registers live, and a mask
  // that is a function of the loop counters is periodic, which branch predictors follow. The
  // max-pool gradients of the CNN training step ran 1.7x faster than with the selects.
  std::string EmitBranchedLoad(const Instr& in, const std::string& self, const std::string& zero) {
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

  // branched_[i]: whether masked load i is spelled as a branch around the load
  // (EmitBranchedLoad) rather than a select. Only when its mask is a function of the loop
  // counters alone that changes in the load's own innermost loop: a mask that follows the data
  // (a loaded index, an accumulator) is one no predictor follows, and a mask fixed in that loop
  // gains nothing from a branch there and splits its body into blocks, which keeps LLVM from
  // vectorizing across the loads (a convolution's input gradient ran 1.3x slower).
  void FindBranchedLoads() {
    const size_t n = p_.instrs.size();
    branched_.assign(n, false);
    std::vector<bool> from_memory(n, false);
    std::vector<int> loop_dependence(n, -1);  // the innermost loop a value changes in
    std::vector<int> open;
    for (size_t i = 0; i < n; ++i) {
      const Instr& in = p_.instrs[i];
      if (in.kind == InstrKind::kLoopEnd && !open.empty()) open.pop_back();
      bool loaded = in.kind == InstrKind::kLoad || in.kind == InstrKind::kAccRead;
      int dependence = -1;
      for (int s : in.src) {
        loaded = loaded || from_memory[s];
        dependence = std::max(dependence, loop_dependence[s]);
      }
      if (in.kind == InstrKind::kLoopBegin || in.kind == InstrKind::kGlobalIndex) {
        dependence = static_cast<int>(i);
        open.push_back(static_cast<int>(i));
      }
      from_memory[i] = loaded;
      loop_dependence[i] = dependence;
      if (in.kind == InstrKind::kLoad && in.src.size() > 1) {
        const int mask = in.src[1];
        branched_[i] = !from_memory[mask] && !open.empty() && loop_dependence[mask] == open.back();
      }
      // The lanes of a strided gather are read by its span loads (EmitStridedLoad); their own
      // loads are left for LLVM to delete, which a branch around each would only slow.
      if (in.kind == InstrKind::kBuild && IsVectorInstr(in) && MatchStridedGather(in)) {
        for (int lane : in.src) branched_[lane] = false;
      }
    }
  }

  void EmitStore(const Instr& in, int i) {
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

  void EmitCheck(const Instr& in, int i) {
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

  std::string Assemble() {
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
    absl::StrAppend(
        &out, "define internal i32 @", p_.name, "_body(", params, ") #0 {\nentry:\n", allocas_,
        body_, "  ret i32 0\n",
        checks_stop_ ? absl::StrCat("stopped:\n  ret i32 ", kCpuKernelStopped, "\n") : "", "}\n\n");
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
      absl::StrAppend(&out, "  %a", v, ".p = getelementptr i64, ptr %vals, i64 ", v, "\n", "  %a",
                      v, " = load i64, ptr %a", v, ".p\n");
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
    absl::StrAppend(&out,
                    "attributes #0 = { nounwind noinline }\nattributes #1 = { nounwind }\n\n");
    absl::StrAppend(&out, "!", mustprogress_id_, " = !{!\"llvm.loop.mustprogress\"}\n", "!",
                    unlikely_id_, " = !{!\"branch_weights\", i32 1048575, i32 1}\n", metadata_);
    return out;
  }

  const LinearProgram& p_;
  const LlvmRendererOptions options_;
  std::vector<std::string> operand_;  // how each instruction's value is spelled as an operand
  std::string allocas_;               // entry-block allocas (loop counters, accumulators)
  std::string body_;
  std::string metadata_;
  std::map<std::string, std::string> declarations_;  // ordered: the output is deterministic
  int counter_ = 0;
  int grid_loop_ = -1;           // the loop standing in for a GPU grid, if any
  std::vector<bool> innermost_;  // by instruction: a loop that contains no other (run in chunks)
  std::vector<bool> branched_;   // by instruction: see FindBranchedLoads
  std::vector<bool> unchecked_;  // by instruction: a short innermost loop, left plain
  std::vector<bool> tile_loop_;  // by instruction: see FindRegisterTileLoops
  bool checks_stop_ = false;
  const int mustprogress_id_ = 0;
  const int unlikely_id_ = 1;
  int no_vectorize_id_ = -1;  // made when a loop first needs it
  int next_metadata_ = 2;
};

}  // namespace

std::string RenderLlvmIr(const LinearProgram& program, const LlvmRendererOptions& options) {
  return IrWriter(program, options).Render();
}

bool LlvmKeepsVector(const LinearProgram& program, const Instr& in,
                     const LlvmRendererOptions& options) {
  // Types LLVM vectors compute in directly: not the emulated small floats, not bools in memory.
  auto plain = [](const DType& d) { return !IsNarrowFloat(d.scalar) && d.scalar != Scalar::kVoid; };
  const DType& d = in.dtype;
  switch (in.kind) {
    case InstrKind::kConst:
    case InstrKind::kBroadcast:
    case InstrKind::kBuild:
      return true;
    case InstrKind::kHReduce:
      return plain(d) && d.scalar != Scalar::kBool;
    case InstrKind::kLoad:
    case InstrKind::kStore: {
      if (IsMaskedAccess(in) && options.max_masked_vector_bits > 0 &&
          d.count * ScalarItemSize(d.scalar) * 8 > options.max_masked_vector_bits) {
        return false;
      }
      return d.scalar != Scalar::kBool;
    }
    case InstrKind::kAccDefine:
      return plain(d) && d.scalar != Scalar::kBool;
    case InstrKind::kCast: {
      const DType& from = program.instrs[in.src[0]].dtype;
      if (!plain(d) || !plain(from) || d.scalar == Scalar::kBool) return false;
      // A mask to a float is a select of 1.0 and 0.0 (max-pool gradients count matches so):
      // lane by lane it was an extract, a convert and an insert per lane.
      if (from.scalar == Scalar::kBool) return IsFloat(d.scalar);
      // Float to int saturates: llvm.fptosi.sat has vector forms; the unsigned paths stay scalar.
      if (IsFloat(from.scalar))
        return IsFloat(d.scalar) || (IsInt(d.scalar) && !IsUnsigned(d.scalar));
      return !IsFloat(d.scalar) || !IsUnsigned(from.scalar);  // no vector uitofp (see above)
    }
    case InstrKind::kBitcast: {
      const DType& from = program.instrs[in.src[0]].dtype;
      auto bits = [&](const DType& t) {
        return t.scalar != Scalar::kBool && t.scalar != Scalar::kIndex && plain(t);
      };
      return bits(d) && bits(from) && ScalarItemSize(d.scalar) == ScalarItemSize(from.scalar);
    }
    case InstrKind::kAlu: {
      const DType& operand = program.instrs[in.src[0]].dtype;
      if (!plain(d) || !plain(operand)) return false;
      switch (in.op) {
        case Op::kAdd:
        case Op::kSub:
        case Op::kMul:
        case Op::kMax:
        case Op::kAnd:
        case Op::kOr:
        case Op::kXor:
        case Op::kNeg:
        case Op::kCmplt:
        case Op::kCmpne:
        case Op::kCmpeq:
        case Op::kWhere:
          return true;
        case Op::kFdiv:
        case Op::kReciprocal:
          return IsFloat(d.scalar);
        case Op::kIdiv:
        case Op::kMod:
          return !IsFloat(d.scalar) && d.scalar != Scalar::kBool;  // Legalize guards divisors
        default:
          return false;
      }
    }
    default:
      return false;
  }
}

absl::StatusOr<ProgramSpec> LlvmRenderer::RenderImpl(std::shared_ptr<const KernelAst> ast,
                                                     const std::string& name,
                                                     const RenderOptions& render) const {
  CpuLoweringOptions lowering;
  lowering.min_parallel_work = options_.min_parallel_work;
  lowering.gpu_lowering = options_.gpu_lowering;
  UOPD_ASSIGN_OR_RETURN(CpuLowering lowered,
                        LowerCpuKernel(ast, SanitizeKernelName(name), lowering));
  LinearProgram program =
      Legalize(Devectorize(lowered.program, [this](const LinearProgram& p, const Instr& in) {
        return LlvmKeepsVector(p, in, options_);
      }));
  if (render.allow_fma) program = FuseMultiplyAdds(program);
  if (options_.gpu_lowering) {
    // The CPU runtime passes core_id and core_count after the client's variables.
    program.var_names.push_back(kCoreIdVar);
    program.var_names.push_back(kCoreCountVar);
  }
  ProgramSpec spec = SpecFromLinearProgram(program, "CPU", ast);
  spec.src = RenderLlvmIr(program, options_);
  if (program.parallel) {
    spec.global_size[0] = program.parallel_extent;
    spec.global_size[0].owner = lowered.expanded;  // the extent's expression lives in that graph
  }
  return spec;
}

std::string LlvmRenderer::Identity() const {
  return absl::StrCat(
      "llvm-ir/v8;split=", options_.min_parallel_work, options_.gpu_lowering ? ";gpu-lowering" : "",
      options_.max_widened_accumulators > 0
          ? absl::StrCat(";widened-accumulators<=", options_.max_widened_accumulators)
          : "",
      options_.max_masked_vector_bits > 0
          ? absl::StrCat(";masked-vectors<=", options_.max_masked_vector_bits)
          : "");
}

}  // namespace uopd
