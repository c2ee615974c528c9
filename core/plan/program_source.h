// ProgramSource: where execution plans get runnable kernels from. The implementation,
// CachingProgramSource (core/cache), renders, compiles and loads each kernel once, through the
// compiled-byte cache (which may have no tiers at all, for tools and tests).
#ifndef UOPD_CORE_PLAN_PROGRAM_SOURCE_H_
#define UOPD_CORE_PLAN_PROGRAM_SOURCE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/device/device.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/optimize.h"

namespace uopd {

// A kernel ready to run on one device: its spec, its bytes, and the loaded program.
// Immutable: shareable across plans and threads.
struct LoadedProgram {
  std::string key_hex;       // its compiled-byte cache key
  std::vector<Opt> applied;  // the opts it was optimized with
  std::shared_ptr<const ProgramSpec> spec;
  std::shared_ptr<const CompiledKernel> compiled;
  std::shared_ptr<Program> program;
};

// Implementations are safe for concurrent use.
class ProgramSource {
 public:
  virtual ~ProgramSource() = default;
  // The kernel `ast`, optimized as `optimization` asks, made runnable on `device`. Errors come
  // from optimizing (INVALID_ARGUMENT naming a bad opt), rendering (INVALID_ARGUMENT,
  // UNIMPLEMENTED), compiling (INTERNAL, RESOURCE_EXHAUSTED) or loading; CANCELLED once `stop`
  // (may be null) is set while waiting for a compile.
  virtual absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(
      Device& device, std::shared_ptr<const KernelAst> ast, const OptimizeRequest& optimization,
      const StopFlag* stop) = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_PLAN_PROGRAM_SOURCE_H_
