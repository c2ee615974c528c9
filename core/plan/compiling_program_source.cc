#include "core/plan/compiling_program_source.h"

#include "absl/strings/str_cat.h"
#include "core/util/large_stack.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<std::shared_ptr<const LoadedProgram>> CompilingProgramSource::Build(
    Device& device, std::shared_ptr<const KernelAst> ast) {
  UOPD_ASSIGN_OR_RETURN(ProgramSpec spec, device.renderer().Render(ast, ast->DefaultName()));
  compilations_.fetch_add(1);
  UOPD_ASSIGN_OR_RETURN(CompiledKernel compiled, device.compiler().Compile(spec));
  UOPD_ASSIGN_OR_RETURN(std::shared_ptr<Program> program, device.runtime().Load(compiled, spec));
  auto loaded = std::make_shared<LoadedProgram>();
  loaded->spec = std::make_shared<const ProgramSpec>(std::move(spec));
  loaded->compiled = std::make_shared<const CompiledKernel>(std::move(compiled));
  loaded->program = std::move(program);
  return std::shared_ptr<const LoadedProgram>(std::move(loaded));
}

absl::StatusOr<std::shared_ptr<const LoadedProgram>> CompilingProgramSource::Get(
    Device& device, std::shared_ptr<const KernelAst> ast) {
  const std::string key = absl::StrCat(device.name(), "/", ast->hash);
  std::shared_ptr<Entry> entry;
  bool leader = false;
  {
    absl::MutexLock lock(&mu_);
    auto& slot = entries_[key];
    if (slot == nullptr) {
      slot = std::make_shared<Entry>();
      leader = true;
    }
    entry = slot;
  }
  if (!leader) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&entry->ready));
    if (entry->status.ok()) return entry->program;
    return entry->status;
  }
  // Compile outside the lock (waiters park on `ready`), on a stack deep graphs cannot exhaust.
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> built = absl::InternalError("not built");
  RunOnLargeStack(kCompileStackBytes, [&] { built = Build(device, ast); });
  absl::MutexLock lock(&mu_);
  entry->ready = true;
  if (built.ok()) {
    entry->program = *built;
  } else {
    entry->status = built.status();
    entries_.erase(key);  // failures are not cached: the next request tries again
  }
  return built;
}

}  // namespace uopd
