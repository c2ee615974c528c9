// OptTarget: what a device offers the optimizer (tinygrad's Renderer fields: locals, shared
// memory, threads), so opts are checked as tinygrad checks them for that device.
#ifndef UOPD_CORE_OPT_OPT_TARGET_H_
#define UOPD_CORE_OPT_OPT_TARGET_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/opt/tensor_core.h"

namespace uopd {

// What a device offers the optimizer (tinygrad's Renderer fields).
struct OptTarget {
  std::string device = "CPU";
  bool has_local = false;    // workgroups: LOCAL, GROUP, GROUPTOP
  bool has_shared = false;   // shared memory (GROUP reductions)
  bool has_threads = false;  // THREAD
  int64_t max_threads = 0;   // THREAD's limit (tinygrad's global_max[0] on the CPU)
  int cores = 1;             // CPU: the threads a kernel really runs on (the cost model's)
  std::array<int64_t, 3> local_max = {1024, 1024, 64};
  int64_t shared_max = 0;  // bytes of shared memory a block may declare (has_shared)
  // CPU: the SIMD registers the heuristics tile for (AVX-512: 32 of 64 bytes).
  int vector_bytes = 32;
  int vector_registers = 16;
  // The TC opt's matrix units, and whether float32 may run on a TF32 one (tinygrad's
  // ALLOW_TF32: off, as its default, because TF32 rounds the inputs to 10 bits).
  std::vector<TensorCore> tensor_cores;
  bool allow_tf32 = false;
  // GPU: the threads of a launched block and of a warp (CUDA: as the backend launches them).
  int block_threads = 0;
  int warp_lanes = 0;

  // uopd's CPU: threads up to the core count (at least 8, as tinygrad's corpus was captured).
  static OptTarget Cpu(int cores);
  // A CUDA GPU of architecture `arch` ("sm_80"): locals, CUDA blocks and their shared memory
  // (core/codegen/codegen_target.h).
  static OptTarget Cuda(const std::string& arch);
};

// Process-wide: whether CUDA targets offer their tensor cores to the TC opt, the heuristics
// and the search (the daemon's --tensor_cores; false is tinygrad's TC=0). True unless set.
void SetTensorCoresEnabled(bool enabled);
bool TensorCoresEnabled();

// The target of a backend: "CPU" with `threads` cores (its vector registers read from the
// compile target's feature string), or "CUDA" for `compile_target` ("sm_90").
OptTarget OptTargetFor(const std::string& base_device, const std::string& compile_target,
                       int threads);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_OPT_TARGET_H_
