// A tensor core's instruction (WMMA, from the TC opt: core/opt/scheduler.h) after ExpandRanges:
// WMMA(VECTORIZE(a...), VECTORIZE(b...), c) computes D = A x B + C for a whole warp, each
// thread holding some elements of each matrix (its fragments) in the layout the hardware
// defines. GEP(WMMA, e) is this thread's element e of D.
//
// DecomposeWmma writes the instruction out for targets without tensor cores (the CPU running a
// GPU program's threads as loops, where the GPU lowering is checked against the reference
// interpreter): element e of D is C's element plus the K products of A's and B's elements it
// needs, each read as the thread that holds it would read it (the operand's expression with
// the warp range replaced by that thread's lane). The layouts are NVIDIA's mma.sync fragments
// for M = 16, N = 8 (PTX ISA, "Matrix Fragments for mma.m16n8k*"), as tinygrad's GPU emulator
// (runtime/ops_python.py) describes them.
#ifndef UOPD_CORE_CODEGEN_WMMA_H_
#define UOPD_CORE_CODEGEN_WMMA_H_

#include <array>
#include <memory>

#include "absl/status/statusor.h"
#include "core/ir/kernel_ast.h"

namespace uopd {

// The WMMA argument's numbers (Arg::ints): N, M, K, the warp's threads and the elements a
// thread holds of A, B and C/D.
struct WmmaShape {
  int n = 0, m = 0, k = 0, threads = 0;
  std::array<int, 3> elements = {0, 0, 0};
};

// Whether `ast` holds a tensor core's instruction.
bool HasWmma(const KernelAst& ast);

// INVALID_ARGUMENT naming the node when its argument is not a shape.
absl::StatusOr<WmmaShape> WmmaShapeOf(const UOp& wmma);

// A new AST (own graph) without WMMA nodes; the same AST when it has none. UNIMPLEMENTED for a
// shape without a known layout.
absl::StatusOr<std::shared_ptr<const KernelAst>> DecomposeWmma(
    std::shared_ptr<const KernelAst> ast);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_WMMA_H_
