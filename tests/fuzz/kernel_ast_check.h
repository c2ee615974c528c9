// What kernel_ast_fuzzer does with one input, shared with the regression test that replays the
// inputs fuzzing once found (tests/fuzz/regressions/): bytes -> uopd.v1.Graph -> decode and
// validate -> AST hash -> lower -> render (LLVM IR for the CPU, as for a GPU grid, and CUDA C
// when built). Nothing may crash, hang or trip a sanitizer, whatever the bytes; a graph that
// decodes must hash the same after an encode/decode round trip.
#ifndef UOPD_TESTS_FUZZ_KERNEL_AST_CHECK_H_
#define UOPD_TESTS_FUZZ_KERNEL_AST_CHECK_H_

#include <cstdint>
#include <cstdlib>

#include "backends/cpu/llvm_renderer.h"
#include "core/ir/kernel_ast.h"
#include "core/wire/decode.h"
#include "core/wire/encode.h"
#include "uopd/v1/graph.pb.h"
#ifdef UOPD_WITH_CUDA
#include "backends/cuda/cuda_renderer.h"
#endif

namespace uopd::fuzz {

// Returns whether the input decoded to a kernel (for the regression test to report).
inline bool CheckKernelAst(const uint8_t* data, size_t size) {
  v1::Graph graph;
  if (!graph.ParseFromArray(data, static_cast<int>(size))) return false;
  // Small limits keep each input fast; deep graphs are tested apart (they need a big stack).
  IrLimits limits;
  limits.max_nodes = 4096;
  limits.max_depth = 256;
  limits.max_buffer_elements = int64_t{1} << 24;
  auto ast = DecodeKernelAst(graph, limits);
  if (!ast.ok()) return false;
  auto again = DecodeKernelAst(EncodeGraph((*ast)->root), limits);
  if (!again.ok() || (*again)->hash != (*ast)->hash) std::abort();
  (void)LlvmRenderer().Render(*ast, (*ast)->DefaultName());
  LlvmRendererOptions grid;
  grid.gpu_lowering = true;
  (void)LlvmRenderer(grid).Render(*ast, (*ast)->DefaultName());
#ifdef UOPD_WITH_CUDA
  (void)CudaRenderer().Render(*ast, (*ast)->DefaultName());
#endif
  return true;
}

}  // namespace uopd::fuzz

#endif  // UOPD_TESTS_FUZZ_KERNEL_AST_CHECK_H_
