// TensorCore: one matrix unit a target offers the optimizer, as tinygrad's tc.py describes it
// (D = A * B + C with A of M x K, B of K x N): the shape, the warp that computes it, and the
// opts ("u0", "l1", ...) that split the kernel's N, M and K ranges into the unit's layout.
// The TC opt (Scheduler) reads these; the tables are tinygrad 0.12's for NVIDIA.
#ifndef UOPD_CORE_OPT_TENSOR_CORE_H_
#define UOPD_CORE_OPT_TENSOR_CORE_H_

#include <array>
#include <string>
#include <vector>

#include "core/ir/dtype.h"

namespace uopd {

struct TensorCore {
  std::array<int, 3> dims;                 // N, M, K
  int threads;                             // the warp's threads
  std::array<int, 3> elements_per_thread;  // of A, B and C/D
  Scalar dtype_in;
  Scalar dtype_out;
  // In order: "uD" upcasts dimension D by 2, "lD" makes a factor 2 of it a warp thread.
  std::vector<std::string> opts;
  // For A and B: which of the core's factors ("l0".., "u0".., "r0"..: warp bits, upcasts,
  // K's unrolls) each of the warp bits, upcasts and unrolls of the operand's index takes, so
  // that a thread loads the fragment the instruction expects of it (tinygrad's swizzle).
  std::array<std::array<std::vector<std::string>, 3>, 2> swizzle;

  // K's factors of 2, each an UNROLL of the reduction (tinygrad's get_reduce_axes).
  int ReduceAxes() const;
  // "WMMA_8_16_16_half_float", as tinygrad names it.
  std::string Name() const;
  // The factors in the order the TC opt creates them: "u0", "l0", "l1", ... per opts, then
  // "r0".. for K (tinygrad's base_shape_str).
  std::vector<std::string> BaseShape() const;
  // Per operand, the factor each factor of BaseShape() is replaced by in its index: factor j
  // becomes factor Permutation()[operand][j] (tinygrad's argsort of permutes_for_shape_str).
  std::array<std::vector<int>, 2> OperandPermutations() const;
  // The upcast and unroll factors whose values number a thread's fragment elements, slowest
  // first; operand i (A, B, C/D) uses the first log2(elements_per_thread[i]) of them
  // (tinygrad's base_upcast_axes).
  std::vector<std::string> FragmentFactors() const;
};

// The tensor cores of an NVIDIA architecture ("sm_80"), tinygrad's cuda_sm75/80/89 lists: none
// before sm_75.
std::vector<TensorCore> CudaTensorCores(const std::string& arch);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_TENSOR_CORE_H_
