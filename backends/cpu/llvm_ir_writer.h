// LlvmIrWriter: spells one lowered kernel (core/codegen/pipeline.h) as LLVM IR text, as the
// pipeline's plans say (loops, stop checks, branched loads). Internal to the CPU backend: the
// LLVM renderer is its one user. One file per part: operands, types and the instruction
// dispatch (llvm_ir_writer.cc), scalar arithmetic, casts and memory (llvm_ir_scalar.cc), vectors
// (llvm_ir_vector.cc), loops, stop checks and accumulators (llvm_ir_loops.cc); the spelling of
// each op, shared by scalars and vectors, in llvm_op_table.h.
#ifndef UOPD_BACKENDS_CPU_LLVM_IR_WRITER_H_
#define UOPD_BACKENDS_CPU_LLVM_IR_WRITER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/cpu/llvm_renderer.h"
#include "core/codegen/linear_program.h"
#include "core/codegen/loop_plan.h"

namespace uopd {

class LlvmIrWriter {
 public:
  LlvmIrWriter(const LinearProgram& program, const LoopPlan& plan,
               const LlvmRendererOptions& options)
      : p_(program), plan_(plan), options_(options) {}

  std::string Render();

 private:
  // ---- Types ----------------------------------------------------------------------------------

  std::string IndexType() const { return p_.index_bits == 32 ? "i32" : "i64"; }

  // The type a value lives in while computed.
  std::string RegType(const DType& d) const;
  // The type a value is stored as in a buffer: bools are one byte.
  std::string MemType(const DType& d) const;
  // The type arithmetic happens in: emulated floats compute in float.
  std::string ComputeType(const DType& d) const;
  static bool IsFloatCompute(const DType& d) { return IsFloat(d.scalar); }
  static bool IsSigned(const DType& d) { return IsInt(d.scalar) && !IsUnsigned(d.scalar); }
  int Bits(const DType& d) const;

  // ---- Output helpers -------------------------------------------------------------------------

  std::string Fresh(absl::string_view hint) { return absl::StrCat("%", hint, ".", counter_++); }
  void Line(absl::string_view text) { absl::StrAppend(&body_, "  ", text, "\n"); }
  void Label(absl::string_view label) { absl::StrAppend(&body_, label, ":\n"); }
  const std::string& Op(int i) const { return operand_[i]; }
  const DType& TypeOf(int i) const { return p_.instrs[i].dtype; }

  static std::string FloatLiteral(double v, bool is_double);

  std::string ConstLiteral(const Instr& in, int lane = 0) const;

  // Widens an emulated float value to float; other values pass through.
  std::string ToCompute(const std::string& value, const DType& d);
  // Rounds a float (or double) result back to an emulated float's bits.
  std::string FromCompute(const std::string& value, const std::string& from_type, const DType& d);

  // ---- Instructions ---------------------------------------------------------------------------

  void EmitInstr(int i);

  // ---- Vectors ---------------------------------------------------------------------------------
  // The vector instructions LlvmKeepsVector lets through (Devectorize rewrote the others).

  static bool IsVectorInstr(const Instr& in);
  std::string ScalarType(DType d) const;
  std::string VecType(const DType& d) const;
  std::string BoolVec(int width) const { return absl::StrCat("<", width, " x i1>"); }
  // Vector accesses are aligned to their element only.
  static std::string ElementAlign(const DType& d);
  // "<4 x i32> <i32 0, i32 1, ...>"-style lane list of a mask for shufflevector.
  static std::string LaneMask(int from, int count);
  // A scalar operand repeated in every lane.
  std::string Splat(const std::string& scalar, const DType& vector_type);

  void EmitVector(int i, const std::string& self);

  bool EmitStridedLoad(const Instr& build, const std::string& self);

  std::string EmitVectorAlu(const Instr& in, const std::string& self);

  std::string EmitVectorCast(const Instr& in, const std::string& self);

  // A vector mask from a vector or scalar bool operand.
  std::string MaskOf(int instr, int width);

  // "llvm.masked.load.v16f32.p0": named for the register type (emulated floats are integers).
  std::string MaskedIntrinsic(const char* what, const DType& d);

  std::string EmitVectorLoad(const Instr& in, const std::string& self);

  void EmitVectorStore(const Instr& in);

  // Branches to the kernel's early return when the stop word is set (rarely taken).
  void CheckStop(int i);

  bool Chunked(int loop) const { return plan_.stop[loop] == StopCheck::kBetweenChunks; }

  // for (x = start; x < end; ++x), with x in an alloca that mem2reg promotes. An innermost loop
  // runs in chunks of plan_.stop_chunk iterations with the stop check between chunks, so its own
  // body stays a plain counted loop the vectorizer takes; an outer loop checks every iteration.
  // Range starts are never negative, so end - chunk start does not overflow.
  std::string BeginLoop(int i, const std::string& start, const std::string& end);

  void EndLoop(int loop);

  int LoopMetadata(bool vectorize);

  std::string EmitAccUpdate(const Instr& in);

  // a op b for the reduction ops (ADD, MUL, MAX) and every binary ALU op.
  std::string Combine(uopd::Op op, const std::string& a_in, const std::string& b_in, const DType& d,
                      bool reassoc);

  // Records the declaration of an LLVM intrinsic the body calls.
  void Declare(const std::string& ret, const std::string& name, const std::string& params);

  static std::string IntrinsicSuffix(const std::string& t) { return t == "double" ? "f64" : "f32"; }

  // a*b+c for float32/float64 scalars or vectors, rounded once where the target has an FMA
  // (llvm.fmuladd): only FuseMultiplyAdds makes these, for requests that allow it.
  std::string FusedMultiplyAdd(const std::string& a, const std::string& b, const std::string& c,
                               const DType& d, bool reassoc);

  // IDIV/MOD: Legalize made every divisor safe (never 0, never -1 for signed types).
  std::string Divide(uopd::Op op, const std::string& a, const std::string& b, const DType& d);

  std::string EmitAlu(const Instr& in, const std::string& self);

  // An integer value resized to another integer dtype (sign-extending signed sources).
  std::string Resize(const std::string& v, const DType& from, const DType& to);

  // An unsigned integer to `target` without `uitofp`: LLVM 19's x86 backend miscompiles vector
  // `uitofp` of sign-extended values (a uint64 cast from int8 -32 came out 224.0 in vectorized
  // loops of 7 or 37 elements). Narrow values widen to i64 and convert signed (exactly); a 64-bit
  // one above 2^63 halves with its low bit kept (round to odd), converts, and doubles: correctly
  // rounded.
  std::string UnsignedToFloat(const std::string& v, const DType& from, const std::string& target);

  std::string EmitCast(int src_index, const DType& to, const std::string& self);

  std::string EmitBitcast(int src_index, const DType& to, const std::string& self);

  // `inbounds` only where the address is one that is accessed: a masked vector access's first
  // lane may be masked off and point before the buffer (a padded row's -22 in
  // mov_pad_4d_2x3x4x5), and an inbounds GEP outside its object is poison, which LLVM used to
  // drop the mask's other conditions (wrong elements on AVX2).
  std::string Address(int slot, const DType& d, const std::string& index, bool inbounds = true);

  std::string EmitLoad(const Instr& in, int i, const std::string& self);

  // A load behind a branch on its mask, as a C compiler spells tinygrad's `m ? *p : 0`: its
  // address stays an affine function of the loop counters (no select on the index), so LLVM
  // folds constant offsets into the addressing and keeps few index registers live, and a mask
  // that is a function of the loop counters is periodic, which branch predictors follow. The
  // max-pool gradients of the CNN training step ran 1.7x faster than with the selects.
  std::string EmitBranchedLoad(const Instr& in, const std::string& self, const std::string& zero);

  void EmitStore(const Instr& in, int i);

  void EmitCheck(const Instr& in, int i);

  std::string Assemble();

  const LinearProgram& p_;
  const LoopPlan& plan_;
  const LlvmRendererOptions options_;
  std::vector<std::string> operand_;  // how each instruction's value is spelled as an operand
  std::string allocas_;               // entry-block allocas (loop counters, accumulators)
  std::string body_;
  std::string metadata_;
  std::map<std::string, std::string> declarations_;  // ordered: the output is deterministic
  int counter_ = 0;
  int grid_loop_ = -1;  // the loop standing in for a GPU grid, if any
  bool checks_stop_ = false;
  const int mustprogress_id_ = 0;
  const int unlikely_id_ = 1;
  int no_vectorize_id_ = -1;  // made when a loop first needs it
  int next_metadata_ = 2;
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_LLVM_IR_WRITER_H_
