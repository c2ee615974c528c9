// CompilingProgramSource: renders, compiles and loads kernels, once per (device, AST): equal
// ASTs share one compilation and one loaded program, and concurrent requests for the same
// missing kernel wait for a single compilation (single flight). Failures are not remembered.
#ifndef UOPD_CORE_PLAN_COMPILING_PROGRAM_SOURCE_H_
#define UOPD_CORE_PLAN_COMPILING_PROGRAM_SOURCE_H_

#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/plan/program_source.h"

namespace uopd {

// Safe for concurrent use.
class CompilingProgramSource : public ProgramSource {
 public:
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(
      Device& device, std::shared_ptr<const KernelAst> ast) override;

  // How many kernels were compiled (not served from memory) so far.
  int64_t compilations() const { return compilations_.load(); }

 private:
  struct Entry {
    bool ready = false;
    absl::Status status;
    std::shared_ptr<const LoadedProgram> program;
  };
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Build(Device& device,
                                                             std::shared_ptr<const KernelAst> ast);

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> compilations_{0};
};

}  // namespace uopd

#endif  // UOPD_CORE_PLAN_COMPILING_PROGRAM_SOURCE_H_
