// Compiler: source (a ProgramSpec) to bytes. Stateless between calls.
#ifndef UOPD_CORE_DEVICE_COMPILER_H_
#define UOPD_CORE_DEVICE_COMPILER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/device/program_spec.h"

namespace uopd {

struct CompiledKernel {
  std::string bytes;  // an ELF object (CPU) or CUBIN (CUDA)
  std::string entry;  // the symbol to call
  std::string ptx;    // CUDA: the PTX too, which drivers can JIT for GPUs the CUBIN is not for
};

// Implementations are safe for concurrent use: many compiles may run at once.
class Compiler {
 public:
  virtual ~Compiler() = default;
  // Errors: INTERNAL when the backend rejects source we generated (our bug; the message carries
  // the compiler's diagnostics).
  virtual absl::StatusOr<CompiledKernel> Compile(const ProgramSpec& spec) const = 0;
  // What the bytes are for: "x86_64-pc-linux-gnu;znver3;+avx2,..." or "sm_90". Never "native".
  virtual std::string Target() const = 0;
  // Compiler identity for the cache key: backend, compiler version, codegen version, options.
  virtual std::string Identity() const = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_COMPILER_H_
