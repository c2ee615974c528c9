#include "core/program/load_layer.h"

#include "absl/strings/str_cat.h"
#include "core/cache/program_codec.h"
#include "core/util/log.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<std::shared_ptr<const LoadedProgram>> LoadLayer::Get(
    Device& device, std::shared_ptr<const KernelAst> ast, const OptimizeRequest& optimization,
    const StopFlag* stop) {
  const OptimizeRequest request = optimizer_.Resolve(optimization);
  const std::string memo_key = absl::StrCat(device.name(), "/", ast->hash, "/", request.Key());
  {
    absl::MutexLock lock(&mu_);
    if (auto it = index_.find(memo_key); it != index_.end()) {
      loaded_.splice(loaded_.begin(), loaded_, it->second);
      return it->second->second;
    }
  }
  const CompilerPair& pair = device.compilers().front();
  UOPD_ASSIGN_OR_RETURN(OptimizeRequest concrete, optimizer_.ForDevice(device, ast, request, stop));
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "optimizing"));
  UOPD_ASSIGN_OR_RETURN(OptimizedKernel optimized,
                        OptimizeKernel(ast,
                                       OptTargetFor(device.spec().base_device_key(),
                                                    pair.compiler->Target(), device.threads()),
                                       concrete));
  const CacheKey key = KeyFor(device.spec().base_device_key(), pair, ast->hash,
                              OptsToString(optimized.applied), request.render.FloatMode());
  const std::string key_hex = key.Hex();
  UOPD_RETURN_IF_ERROR(CheckNotStopped(stop, "rendering"));
  UOPD_ASSIGN_OR_RETURN(ProgramSpec spec,
                        RenderOnCompileStack(pair, optimized.ast, request.render));
  spec.ast = optimized.ast;
  std::shared_ptr<Program> program;
  std::shared_ptr<const CompiledKernel> compiled;
  for (int attempt = 0;; ++attempt) {
    UOPD_ASSIGN_OR_RETURN(CacheLookup lookup, compiler_.CompileSpec(pair, spec, key, stop));
    absl::Status usable = absl::OkStatus();
    if (lookup.entry->is_search_record() || !SameProgramMetadata(lookup.entry->spec, spec)) {
      usable = absl::DataLossError("its metadata does not match the kernel's AST");
    } else if (lookup.entry->spec.src != spec.src) {
      // Compiled from other source than this build renders for the kernel: by an older
      // codegen whose change did not bump the compiler identity in the key, say. Its object
      // may do what this build's codegen no longer does (a fixed bug), so it is never run.
      usable = absl::DataLossError("it was compiled from other source than this build renders");
    } else {
      auto bytes = std::make_shared<const CompiledKernel>(lookup.entry->kernel);
      absl::StatusOr<std::shared_ptr<Program>> loaded = device.runtime().Load(*bytes, spec);
      if (loaded.ok()) {
        program = *std::move(loaded);
        compiled = std::move(bytes);
        break;
      }
      usable = loaded.status();
    }
    if (lookup.answered_by == "compiled" || attempt > 0) return usable;
    // A stored entry that cannot be used is dropped everywhere and compiled anew, so it cannot
    // fail this kernel forever (across restarts, for the disk tier).
    Log(LogLevel::kWarning, "dropping a cache entry that cannot be used",
        {{"key", key_hex}, {"tier", lookup.answered_by}, {"why", usable.ToString()}});
    cache_.Invalidate(key_hex);
  }
  auto loaded = std::make_shared<LoadedProgram>();
  loaded->key_hex = key_hex;
  loaded->applied = std::move(optimized.applied);
  loaded->spec = std::make_shared<const ProgramSpec>(std::move(spec));
  loaded->compiled = std::move(compiled);
  loaded->program = std::move(program);
  return Keep(memo_key, std::move(loaded));
}

std::shared_ptr<const LoadedProgram> LoadLayer::Keep(const std::string& memo_key,
                                                     std::shared_ptr<const LoadedProgram> loaded) {
  absl::MutexLock lock(&mu_);
  if (auto it = index_.find(memo_key); it != index_.end()) return it->second->second;  // a racer
  loaded_.emplace_front(memo_key, loaded);
  index_[memo_key] = loaded_.begin();
  while (loaded_.size() > max_loaded_) {
    index_.erase(loaded_.back().first);
    loaded_.pop_back();  // plans still holding it keep it alive
  }
  return loaded;
}

}  // namespace uopd
