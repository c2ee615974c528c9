#include "backends/cpu/llvm_renderer.h"

#include "absl/strings/str_cat.h"
#include "backends/cpu/llvm_ir_writer.h"
#include "core/codegen/grid_vector_access.h"

namespace uopd {

std::string RenderLlvmIr(const LinearProgram& program, const LoopPlan& plan,
                         const LlvmRendererOptions& options) {
  return LlvmIrWriter(program, plan, options).Render();
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

CodegenTarget LlvmRenderer::Target(const LlvmRendererOptions& options) {
  CodegenTarget target = CodegenTarget::CpuLoops();
  target.min_parallel_work = options.min_parallel_work;
  if (options.gpu_lowering) {
    target.parallelism = CodegenTarget::Parallelism::kGrid;
    // CUDA's vectors: loads and stores only (core/codegen/grid_vector_access.h).
    target.max_vector_lanes = kGridVectorLanes;
    target.fused_load_bytes = kGridVectorBytes;
    // CUDA's blocks, their GROUP reductions run as work-group loops
    // (core/codegen/work_group_loops.h).
    target.group_threads = kCudaBlockThreads;
    target.shared_bytes = kCudaSharedBytes;
  }
  target.spells_vector = [options](const LinearProgram& p, const Instr& in) {
    return LlvmKeepsVector(p, in, options) && (!options.gpu_lowering || GridKeepsVector(p, in));
  };
  target.stop_chunk = kCpuStopChunk;
  target.max_widened_accumulators = options.max_widened_accumulators;
  target.branch_masked_loads = true;
  return target;
}

std::string LlvmRenderer::Spell(const LoweredKernel& kernel) const {
  return RenderLlvmIr(kernel.program, kernel.loops, options_);
}

std::string LlvmRenderer::Identity() const {
  return absl::StrCat(
      "llvm-ir/v12;split=", options_.min_parallel_work,
      options_.gpu_lowering ? ";gpu-lowering/v2" : "",
      options_.max_widened_accumulators > 0
          ? absl::StrCat(";widened-accumulators<=", options_.max_widened_accumulators)
          : "",
      options_.max_masked_vector_bits > 0
          ? absl::StrCat(";masked-vectors<=", options_.max_masked_vector_bits)
          : "");
}

}  // namespace uopd
