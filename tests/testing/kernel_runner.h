// Test helper: render, compile, load and run a hand-made kernel on a Device, with host vectors
// for its buffers.
#ifndef UOPD_TESTS_TESTING_KERNEL_RUNNER_H_
#define UOPD_TESTS_TESTING_KERNEL_RUNNER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/ir/kernel_ast.h"
#include "core/util/status_macros.h"
#include "core/wire/decode.h"

namespace uopd::testing {

struct HostBuffer {
  std::string bytes;
  template <typename T>
  static HostBuffer Of(const std::vector<T>& values) {
    HostBuffer b;
    b.bytes.resize(values.size() * sizeof(T));
    std::memcpy(b.bytes.data(), values.data(), b.bytes.size());
    return b;
  }
  template <typename T>
  std::vector<T> As() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
};

// `n` values q/16 (q in 0..15, varied by `seed`) as float16 (or bfloat16) bits: the product
// of any two is exact in either type and any sum of such products exact in float32, so a
// matmul over them gives the same bits in every summation order (a tensor core's included).
inline HostBuffer SmallExactValues(size_t n, int seed, bool bfloat16 = false) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float x = static_cast<float>((i * 37 + seed) % 16) / 16.0f;
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    if (x == 0) {
      v[i] = 0;
    } else if (bfloat16) {
      v[i] = static_cast<uint16_t>(bits >> 16);
    } else {
      v[i] = static_cast<uint16_t>(((((bits >> 23) & 0xff) - 127 + 15) << 10) |
                                   ((bits >> 13) & 0x3ff));
    }
  }
  return HostBuffer::Of(v);
}

inline absl::StatusOr<ProgramSpec> RenderOn(const Device& device, const v1::Graph& wire,
                                            const RenderOptions& render = {}) {
  UOPD_ASSIGN_OR_RETURN(auto ast, DecodeKernelAst(wire));
  return device.renderer().Render(ast, ast->DefaultName(), render);
}

// Runs the kernel `ast` as given (no optimization); `buffers` (by slot) are copied in, and
// copied back out afterwards.
inline absl::Status RunAstOn(Device& device, std::shared_ptr<const KernelAst> ast,
                             std::vector<HostBuffer>& buffers,
                             const absl::flat_hash_map<std::string, int64_t>& vars = {},
                             const RenderOptions& render = {}) {
  UOPD_ASSIGN_OR_RETURN(ProgramSpec spec,
                        device.renderer().Render(ast, ast->DefaultName(), render));
  UOPD_ASSIGN_OR_RETURN(CompiledKernel compiled, device.compiler().Compile(spec));
  UOPD_ASSIGN_OR_RETURN(auto program, device.runtime().Load(compiled, spec));
  UOPD_ASSIGN_OR_RETURN(LaunchDims dims, spec.launch_dims(vars));
  std::vector<void*> ptrs;
  Allocator& allocator = device.allocator();
  for (HostBuffer& b : buffers) {
    UOPD_ASSIGN_OR_RETURN(void* p, allocator.Allocate(b.bytes.size()));
    UOPD_RETURN_IF_ERROR(allocator.CopyIn(p, b.bytes.data(), b.bytes.size()));
    ptrs.push_back(p);
  }
  std::vector<int64_t> vals;
  for (const std::string& name : spec.var_names) {
    auto it = vars.find(name);
    vals.push_back(it == vars.end() ? 0 : it->second);
  }
  absl::Status status = program->Execute(ptrs, vals, dims, nullptr);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (status.ok())
      status = allocator.CopyOut(buffers[i].bytes.data(), ptrs[i], buffers[i].bytes.size());
    allocator.Free(ptrs[i], buffers[i].bytes.size());
  }
  return status;
}

inline absl::Status RunOn(Device& device, const v1::Graph& wire, std::vector<HostBuffer>& buffers,
                          const absl::flat_hash_map<std::string, int64_t>& vars = {},
                          const RenderOptions& render = {}) {
  UOPD_ASSIGN_OR_RETURN(auto ast, DecodeKernelAst(wire));
  return RunAstOn(device, std::move(ast), buffers, vars, render);
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_KERNEL_RUNNER_H_
