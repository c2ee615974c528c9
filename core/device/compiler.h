// Compiler: source (a ProgramSpec) to bytes. Stateless between calls.
#ifndef UOPD_CORE_DEVICE_COMPILER_H_
#define UOPD_CORE_DEVICE_COMPILER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/device/program_spec.h"
#include "core/device/stop_flag.h"

namespace uopd {

// What a kernel holds per thread and per block on a GPU, as its compiler reports it.
struct KernelResources {
  int registers = 0;          // per thread
  int64_t shared_bytes = 0;   // static shared memory per block
  int64_t spilled_bytes = 0;  // stored to local memory for lack of registers
};

struct CompiledKernel {
  std::string bytes;  // an ELF object (CPU) or CUBIN (CUDA)
  std::string entry;  // the symbol to call
  std::string ptx;    // CUDA: the PTX too, which drivers can JIT for GPUs the CUBIN is not for
  // CUDA, when just compiled (not kept in the cache): ptxas's report.
  std::optional<KernelResources> resources;
};

struct CompileOptions {
  // Once set, a compile in progress may be abandoned (CANCELLED): its call is over. Null: never.
  const StopFlag* stop = nullptr;
};

// Implementations are safe for concurrent use: many compiles may run at once.
class Compiler {
 public:
  virtual ~Compiler() = default;
  // Errors: INTERNAL when the backend rejects source we generated (our bug; the message carries
  // the compiler's diagnostics); CANCELLED when `options.stop` ended it; RESOURCE_EXHAUSTED when
  // the compile passed a limit (memory, time, output size) of an isolated compiler.
  absl::StatusOr<CompiledKernel> Compile(const ProgramSpec& spec,
                                         const CompileOptions& options = {}) const {
    return CompileImpl(spec, options);
  }
  // What the bytes are for: "x86_64-pc-linux-gnu;znver3;+avx2,..." or "sm_90". Never "native".
  virtual std::string Target() const = 0;
  // Compiler identity for the cache key: backend, compiler version, codegen version, options.
  virtual std::string Identity() const = 0;

 private:
  virtual absl::StatusOr<CompiledKernel> CompileImpl(const ProgramSpec& spec,
                                                     const CompileOptions& options) const = 0;
};

// Wraps a backend's compiler (e.g. to run it in a sandboxed worker process); identity
// when empty. Backends apply it to each compiler they create.
using CompilerWrapper = std::function<std::unique_ptr<Compiler>(const std::string& base_device,
                                                                std::unique_ptr<Compiler>)>;

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_COMPILER_H_
