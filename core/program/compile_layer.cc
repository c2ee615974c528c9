#include "core/program/compile_layer.h"

#include "absl/strings/str_cat.h"
#include "core/util/large_stack.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// The cache entry for `spec` compiled by `pair`, naming the key and AST it belongs to.
absl::StatusOr<CacheEntry> CompileEntry(const CompilerPair& pair, const ProgramSpec& spec,
                                        const CacheKey& key, const StopFlag* stop) {
  CacheEntry entry;
  UOPD_ASSIGN_OR_RETURN(entry.kernel, pair.compiler->Compile(spec, CompileOptions{stop}));
  entry.key = key.Hex();
  entry.ast_hash = key.ast_hash;
  entry.spec = spec;
  entry.spec.ast = nullptr;  // the entry's program is what its bytes say, not the AST's
  return entry;
}

}  // namespace

absl::StatusOr<ProgramSpec> RenderOnCompileStack(const CompilerPair& pair,
                                                 const std::shared_ptr<const KernelAst>& ast,
                                                 const RenderOptions& options) {
  return OnCompileStack([&] { return pair.renderer->Render(ast, ast->DefaultName(), options); });
}

absl::StatusOr<CacheLookup> CompileLayer::CompileSpec(const CompilerPair& pair,
                                                      const ProgramSpec& spec, const CacheKey& key,
                                                      const StopFlag* stop) {
  return cache_.GetOrCompile(
      key, [&] { return CompileEntry(pair, spec, key, stop); }, stop);
}

absl::StatusOr<CompileResult> CompileLayer::Compile(const Device& device,
                                                    std::shared_ptr<const KernelAst> ast,
                                                    const OptimizeRequest& optimization,
                                                    const StopFlag* stop) {
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
  UOPD_ASSIGN_OR_RETURN(OptimizeRequest request,
                        optimizer_.ForDevice(device, ast, optimization, stop));
  return CompileFor(device.spec().base_device_key(), device.compilers().front(), device.threads(),
                    std::move(ast), request, stop);
}

absl::StatusOr<CompileResult> CompileLayer::Compile(const std::string& base_device,
                                                    const CompilerPair& pair,
                                                    std::shared_ptr<const KernelAst> ast,
                                                    const OptimizeRequest& optimization,
                                                    const StopFlag* stop) {
  return CompileFor(base_device, pair, 1, std::move(ast), optimization, stop);
}

absl::StatusOr<CompileResult> CompileLayer::CompileFor(const std::string& base_device,
                                                       const CompilerPair& pair, int threads,
                                                       std::shared_ptr<const KernelAst> ast,
                                                       const OptimizeRequest& optimization,
                                                       const StopFlag* stop) {
  const OptimizeRequest request = optimizer_.ForTarget(base_device, pair, *ast, optimization);
  const OptTarget target = OptTargetFor(base_device, pair.compiler->Target(), threads);
  const std::string memo_key = absl::StrCat(base_device, "/", pair.compiler->Target(), "/", threads,
                                            "/", ast->hash, "/", request.Key());
  std::optional<OptimizedKernel> optimized;
  CompileResult result;
  UOPD_ASSIGN_OR_RETURN(result.applied,
                        optimizer_.ChooseOpts(ast, target, request, memo_key, stop, &optimized));
  result.key = KeyFor(base_device, pair, ast->hash, OptsToString(result.applied),
                      request.render.FloatMode());
  result.key_hex = result.key.Hex();
  auto compile = [&]() -> absl::StatusOr<CacheEntry> {
    if (!optimized.has_value()) {
      UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
      UOPD_ASSIGN_OR_RETURN(optimized, OptimizeOnCompileStack(ast, target, request));
    }
    UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "rendering"));
    UOPD_ASSIGN_OR_RETURN(ProgramSpec spec,
                          RenderOnCompileStack(pair, optimized->ast, request.render));
    UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "compiling"));
    return CompileEntry(pair, spec, result.key, stop);
  };
  UOPD_ASSIGN_OR_RETURN(result.lookup, cache_.GetOrCompile(result.key, compile, stop));
  return result;
}

absl::StatusOr<CompileResult> CompileLayer::CompileSource(const Device& device, ProgramSpec spec,
                                                          const std::string& source_digest,
                                                          const StopFlag* stop) {
  CompileResult result;
  result.key = KeyFor(device, "source:" + source_digest);
  result.key_hex = result.key.Hex();
  auto compile = [&]() -> absl::StatusOr<CacheEntry> {
    CacheEntry entry;
    absl::StatusOr<CompiledKernel> compiled = device.compiler().Compile(spec, CompileOptions{stop});
    if (compiled.status().code() == absl::StatusCode::kInternal) {
      // What the compiler rejects is the client's source, not a server bug.
      return absl::InvalidArgumentError(absl::StrCat("source: ", compiled.status().message()));
    }
    UOPD_RETURN_IF_ERROR(compiled.status());
    entry.kernel = *std::move(compiled);
    entry.spec = spec;
    entry.key = result.key_hex;
    entry.ast_hash = result.key.ast_hash;
    return entry;
  };
  UOPD_ASSIGN_OR_RETURN(result.lookup, cache_.GetOrCompile(result.key, compile, stop));
  return result;
}

}  // namespace uopd
