#include "core/cache/caching_program_source.h"

#include "absl/strings/str_cat.h"
#include "core/cache/program_codec.h"
#include "core/util/large_stack.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<CompileResult> CachingProgramSource::Compile(const Device& device,
                                                            std::shared_ptr<const KernelAst> ast,
                                                            const StopFlag* stop) {
  return Compile(device.spec().base_device_key(), device.compilers().front(), std::move(ast), stop);
}

absl::StatusOr<CompileResult> CachingProgramSource::Compile(const std::string& base_device,
                                                            const CompilerPair& pair,
                                                            std::shared_ptr<const KernelAst> ast,
                                                            const StopFlag* stop) {
  CompileResult result;
  result.key = KeyFor(base_device, pair, ast->hash);
  result.key_hex = result.key.Hex();
  auto compile = [&pair, &ast, stop]() -> absl::StatusOr<v1::CachedKernel> {
    absl::StatusOr<v1::CachedKernel> result = absl::InternalError("not compiled");
    RunOnLargeStack(kCompileStackBytes, [&] {
      result = [&]() -> absl::StatusOr<v1::CachedKernel> {
        UOPD_ASSIGN_OR_RETURN(ProgramSpec spec, pair.renderer->Render(ast, ast->DefaultName()));
        UOPD_ASSIGN_OR_RETURN(CompiledKernel compiled,
                              pair.compiler->Compile(spec, CompileOptions{stop}));
        return EncodeCachedKernel(spec, compiled);
      }();
    });
    return result;
  };
  UOPD_ASSIGN_OR_RETURN(result.lookup, cache_.GetOrCompile(result.key, compile, stop));
  return result;
}

absl::StatusOr<std::shared_ptr<const LoadedProgram>> CachingProgramSource::Get(
    Device& device, std::shared_ptr<const KernelAst> ast, const StopFlag* stop) {
  const std::string memo_key = absl::StrCat(device.name(), "/", KeyFor(device, ast->hash).Hex());
  {
    absl::MutexLock lock(&mu_);
    if (auto it = index_.find(memo_key); it != index_.end()) {
      loaded_.splice(loaded_.begin(), loaded_, it->second);
      return it->second->second;
    }
  }
  UOPD_ASSIGN_OR_RETURN(CompileResult compiled, Compile(device, ast, stop));
  UOPD_ASSIGN_OR_RETURN(DecodedKernel decoded, DecodeCachedKernel(*compiled.lookup.kernel));
  decoded.spec.ast = ast;
  UOPD_ASSIGN_OR_RETURN(std::shared_ptr<Program> program,
                        device.runtime().Load(decoded.kernel, decoded.spec));
  auto loaded = std::make_shared<LoadedProgram>();
  loaded->spec = std::make_shared<const ProgramSpec>(std::move(decoded.spec));
  loaded->compiled = std::make_shared<const CompiledKernel>(std::move(decoded.kernel));
  loaded->program = std::move(program);
  absl::MutexLock lock(&mu_);
  if (auto it = index_.find(memo_key); it != index_.end())
    return it->second->second;  // a racer won
  loaded_.emplace_front(memo_key, loaded);
  index_[memo_key] = loaded_.begin();
  while (loaded_.size() > max_loaded_) {
    index_.erase(loaded_.back().first);
    loaded_.pop_back();  // plans still holding it keep it alive
  }
  return std::shared_ptr<const LoadedProgram>(std::move(loaded));
}

}  // namespace uopd
