// LlvmRenderer: lowers a kernel AST (core/codegen) and renders it as LLVM IR text for the CPU.
//
// Each kernel is two functions: `<name>_body`, which takes one noalias pointer per buffer slot
// and one i64 per variable (var_names order: the client's, then core_id and core_count), and the
// entry `<name>(ptr bufs, ptr vals, ptr stop)` with one uniform signature, so the runtime can
// call any kernel without per-signature glue. The entry returns 0, slot + 1 when a run-time
// bounds check failed, or kCpuKernelStopped when it saw the i32 at `stop` nonzero: outer loops
// read it every iteration, innermost loops every kCpuStopChunk iterations (they run in chunks
// that stay vectorizable). float16, bfloat16 and fp8 values are kept as their bits and computed in
// float32 through the support library (core/util/kernel_support.c), rounding after every operation
// as tinygrad's C backend does.
#ifndef UOPD_BACKENDS_CPU_LLVM_RENDERER_H_
#define UOPD_BACKENDS_CPU_LLVM_RENDERER_H_

#include "core/codegen/codegen_target.h"
#include "core/codegen/linear_program.h"
#include "core/codegen/loop_plan.h"
#include "core/codegen/pipeline.h"

namespace uopd {

inline constexpr int32_t kCpuKernelStopped = -1;
inline constexpr int64_t kCpuStopChunk = 1 << 16;

struct LlvmRendererOptions {
  // Kernels with at least this many loop iterations split their outer loop across threads.
  int64_t min_parallel_work = kDefaultMinParallelWork;
  // Lower as for a GPU (the shared lowering's grid mode), running the grid's threads as one
  // loop (and a GROUP reduction's blocks as work-group loops): lets the GPU lowering be
  // checked on machines without a GPU. Off for real use.
  bool gpu_lowering = false;
  // Innermost loops updating more scalar accumulators than this (register tiles) get
  // llvm.loop.vectorize.enable false, leaving them to the SLP vectorizer; 0: LLVM decides for
  // every loop. CreateCpuDevice sets 16 (ymm0-15) on x86 without AVX-512: on Zen 2 the widened
  // tile of tinygrad's CNN input gradient (r_8_8_13_13_2_4_4_64_4_4, 48 accumulators) gathered
  // and spilled, 93 ms against tinygrad's 42; left to the SLP vectorizer, 42 ms. On AVX-512
  // (Zen 5) earlier sessions measured the widened loop faster, so it stays there.
  int max_widened_accumulators = 0;
  // The widest masked vector load or store spelled llvm.masked.load/store, in bits (wider ones
  // are written lane by lane); 0: any width. CreateCpuDevice sets 256 on x86 without AVX-512:
  // LLVM 19's x86 backend, splitting a masked load wider than the ymm registers, loaded a half
  // whose mask folded to all-false without its mask (wrong elements, and a read past the
  // buffer: mov_pad_4d_2x3x4x5 with PADTO(2, 8) UPCAST(2, 16) on Zen 2). Loads of one register
  // are not split; writing those lane by lane too cost the training step 40% on Zen 2.
  int max_masked_vector_bits = 0;
};

// Immutable: safe for concurrent use.
class LlvmRenderer : public SpellingRenderer {
 public:
  explicit LlvmRenderer(LlvmRendererOptions options = {})
      : SpellingRenderer(Target(options)), options_(options) {}
  std::string Identity() const override;
  std::string Spell(const LoweredKernel& kernel) const override;

  // What LLVM IR spells for the CPU: loops split across threads (or the GPU lowering's grid as
  // a loop), vectors of up to kMaxVectorLanes lanes where LlvmKeepsVector keeps them, EXP2 and
  // LOG2 as arithmetic, a stop word read every kCpuStopChunk iterations, branches around masked
  // loads that follow the loop counter.
  static CodegenTarget Target(const LlvmRendererOptions& options);

 private:
  LlvmRendererOptions options_;
};

// The LLVM IR of a lowered kernel. Vector instructions must be ones LlvmKeepsVector keeps.
std::string RenderLlvmIr(const LinearProgram& program, const LoopPlan& plan,
                         const LlvmRendererOptions& options = {});

// Whether the LLVM renderer spells vector instruction `instr` as a vector (Devectorize writes
// the others lane by lane): arithmetic, comparisons, selects, casts between plain types, loads
// and stores, accumulators and horizontal reductions, except on bools in memory and emulated
// small floats.
bool LlvmKeepsVector(const LinearProgram& program, const Instr& instr,
                     const LlvmRendererOptions& options = {});

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_LLVM_RENDERER_H_
