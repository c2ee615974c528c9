// Renderer: lowers a kernel AST and emits source for one backend. Pure: no device state.
#ifndef UOPD_CORE_DEVICE_RENDERER_H_
#define UOPD_CORE_DEVICE_RENDERER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/device/program_spec.h"

namespace uopd {

// Implementations are immutable after construction: safe for concurrent use.
class Renderer {
 public:
  virtual ~Renderer() = default;
  // Lowers `ast` and renders it as a kernel called `name` (a C identifier). Errors:
  // INVALID_ARGUMENT for ASTs that cannot be lowered (naming the node), UNIMPLEMENTED for
  // constructs this backend does not support.
  virtual absl::StatusOr<ProgramSpec> Render(std::shared_ptr<const KernelAst> ast,
                                             const std::string& name) const = 0;
  // Options that change the rendered source, for the cache key ("cpu-split=65536").
  virtual std::string Identity() const = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_RENDERER_H_
