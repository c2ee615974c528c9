// Renderer: lowers a kernel AST and emits source for one backend. Pure: no device state.
#ifndef UOPD_CORE_DEVICE_RENDERER_H_
#define UOPD_CORE_DEVICE_RENDERER_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/device/program_spec.h"

namespace uopd {

// What a request decides about its kernel's source beyond its opts. Part of the cache key
// (CacheKey::float_mode), since it changes the bytes.
struct RenderOptions {
  // A float32/float64 product used only by an addition may be fused with it into one rounding
  // (core/codegen/fuse_multiply_adds.h; docs/IR.md). Off: every operation rounds, the same bits
  // on every backend and the reference interpreter.
  bool allow_fma = false;

  // The cache key's float_mode: "" (every operation rounds) or "fma".
  std::string FloatMode() const { return allow_fma ? "fma" : ""; }
};

// Implementations are immutable after construction: safe for concurrent use.
class Renderer {
 public:
  virtual ~Renderer() = default;
  // Lowers `ast` and renders it as a kernel called `name` (a C identifier). Errors:
  // INVALID_ARGUMENT for ASTs that cannot be lowered (naming the node), UNIMPLEMENTED for
  // constructs this backend does not support.
  absl::StatusOr<ProgramSpec> Render(std::shared_ptr<const KernelAst> ast, const std::string& name,
                                     const RenderOptions& options = {}) const {
    return RenderImpl(std::move(ast), name, options);
  }
  // Options that change the rendered source, for the cache key ("cpu-split=65536").
  virtual std::string Identity() const = 0;

 private:
  virtual absl::StatusOr<ProgramSpec> RenderImpl(std::shared_ptr<const KernelAst> ast,
                                                 const std::string& name,
                                                 const RenderOptions& options) const = 0;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_RENDERER_H_
