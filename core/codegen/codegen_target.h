// CodegenTarget: what a backend can spell, the one thing the codegen pipeline
// (core/codegen/pipeline.h) asks of it. tinygrad's renderers describe themselves the same way
// (`supports_float4`, `has_local`, `code_for_op`, ...) and leave every decision to shared codegen.
#ifndef UOPD_CORE_CODEGEN_CODEGEN_TARGET_H_
#define UOPD_CORE_CODEGEN_CODEGEN_TARGET_H_

#include <cstdint>
#include <functional>
#include <string>

#include "core/codegen/grid_vector_access.h"
#include "core/codegen/linear_program.h"
#include "core/codegen/warp_reduction.h"

namespace uopd {

// Kernels with at least this many loop iterations split their outer loop across threads.
inline constexpr int64_t kDefaultMinParallelWork = int64_t{1} << 16;
// The most lanes a vector value gets (LLVM splits wider vectors into registers).
inline constexpr int64_t kMaxVectorLanes = 64;
// A CUDA block as uopd launches one: its threads, and the static shared memory it may declare
// without the driver's opt-in. The CUDA backend launches such blocks, the optimizer checks
// opts against them (OptTarget::Cuda), and the CPU's GPU-lowering oracle runs blocks of the
// same size.
inline constexpr int kCudaBlockThreads = 256;
inline constexpr int64_t kCudaSharedBytes = 48 << 10;

struct CodegenTarget {
  // How a kernel's parallel ranges run.
  enum class Parallelism : uint8_t {
    // Loops; the outermost is split across CPU threads (the runtime passes core_id and
    // core_count after the client's variables).
    kThreadLoops,
    // The outermost parallel ranges are one flattened thread index over a 1-D grid.
    kGrid,
  };

  std::string device = "CPU";  // ProgramSpec::device
  Parallelism parallelism = Parallelism::kThreadLoops;
  // kThreadLoops: kernels doing at least this many loop iterations are split across threads.
  int64_t min_parallel_work = kDefaultMinParallelWork;
  // The most lanes a vector value gets: one UPCAST or UNROLL range along contiguous memory
  // becomes vector lanes, the others are written out. 0: every value is a scalar.
  int64_t max_vector_lanes = 0;
  // Which vector instructions the backend spells as vectors (Devectorize writes the others
  // lane by lane, core/codegen/devectorize.h); unset: all of them.
  std::function<bool(const LinearProgram&, const Instr&)> spells_vector;
  // EXP2 and LOG2 written as arithmetic: a call per element would keep loops scalar.
  bool decompose_transcendentals = false;

  // kGrid: threads per block (0: the grid has no launch dims of its own: it runs as one loop on
  // the CPU, which passes core_id and core_count as for kThreadLoops), and the lanes of a warp
  // that may share a reduction (0: none; core/codegen/warp_reduction.h).
  int block_threads = 0;
  int warp_lanes = 0;
  // kGrid: threads per block whose GROUP reductions meet in shared memory after a barrier
  // (LowerOptions::group_threads; 0: GROUP ranges run as loops). With no blocks of its own
  // (GridRunsAsLoop), the CPU runs each block's threads as loops between barriers.
  int group_threads = 0;
  // kGrid with group_threads: the shared memory a block's arrays of partials may take.
  int64_t shared_bytes = 0;
  // kGrid: scalar loads of consecutive elements of one buffer read up to this many bytes at
  // once (core/codegen/consecutive_loads.h); 0: never.
  int fused_load_bytes = 0;
  // kGrid: tensor core instructions (the TC opt's WMMA) are spelled as the hardware's
  // (kWmma); otherwise they are written out per element (core/codegen/wmma.h).
  bool spells_wmma = false;

  // Kernels read a stop word: outer loops every iteration, innermost loops every this many
  // iterations (they run in chunks that stay vectorizable). 0: kernels never stop early.
  int64_t stop_chunk = 0;
  // Innermost loops updating more scalar accumulators than this are register tiles the backend
  // leaves to its straight-line vectorizer (LoopPlan::register_tile); 0: none are.
  int max_widened_accumulators = 0;
  // Masked loads whose mask follows the innermost loop's counter are spelled as branches around
  // the load (LoopPlan::branched) instead of selects.
  bool branch_masked_loads = false;

  // The CPU's loops with vector lanes and EXP2/LOG2 as arithmetic: what the optimizer's cost
  // model lowers with, and what the LLVM renderer completes with what it spells.
  static CodegenTarget CpuLoops() {
    CodegenTarget target;
    target.max_vector_lanes = kMaxVectorLanes;
    target.decompose_transcendentals = true;
    return target;
  }

  // CUDA's grid: a 1-D grid of kCudaBlockThreads-thread blocks, warps of kWarpLanes sharing
  // reductions, GROUP reductions in kCudaSharedBytes of shared memory, scalar arithmetic with
  // vector loads and stores (core/codegen/grid_vector_access.h).
  static CodegenTarget CudaGrid();

  // A grid with no launch dims: the CPU runs its threads as one loop (how the GPU lowering is
  // checked on machines without a GPU).
  bool GridRunsAsLoop() const { return parallelism == Parallelism::kGrid && block_threads == 0; }
};

inline CodegenTarget CodegenTarget::CudaGrid() {
  CodegenTarget target;
  target.device = "CUDA";
  target.parallelism = Parallelism::kGrid;
  target.block_threads = kCudaBlockThreads;
  target.warp_lanes = kWarpLanes;
  target.group_threads = kCudaBlockThreads;
  target.shared_bytes = kCudaSharedBytes;
  target.spells_wmma = true;
  target.max_vector_lanes = kGridVectorLanes;
  target.spells_vector = GridKeepsVector;
  target.fused_load_bytes = kGridVectorBytes;
  return target;
}

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_CODEGEN_TARGET_H_
