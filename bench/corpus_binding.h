// Corpus entries bound to CPU buffers and built into plans, for the benchmarks that time kernels
// one by one (corpus_opt_bench, cost_model_bench): as core/corpus/corpus_runner.cc binds them,
// but kept, so several versions of one kernel can run on the same buffers.
#ifndef UOPD_BENCH_CORPUS_BINDING_H_
#define UOPD_BENCH_CORPUS_BINDING_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/corpus/corpus_file.h"
#include "core/opt/opt.h"
#include "core/opt/opt_target.h"
#include "core/plan/execution_plan.h"
#include "core/program/caching_program_source.h"

namespace uopd::bench {

// A corpus entry's buffers and kernels.
struct Bound {
  std::vector<BufferView> buffers;
  std::vector<KernelBinding> kernels;
  absl::flat_hash_map<std::string, int64_t> vars;
};

absl::StatusOr<Bound> Bind(Device& device, const CorpusEntry& entry);

// The entry's kernels built into a plan with `mode` over `bound`'s buffers (versions share
// them) and run once (so every kernel's inputs hold what they hold in a real run, and its
// variable values are bound).
struct Built {
  std::unique_ptr<ExecutionPlan> plan;
  std::vector<LaunchDims> dims;  // per kernel

  // Runs kernel `k` once, directly (no plan overhead); false on an error.
  bool Call(int k) const;
};

absl::StatusOr<Built> Build(Device& device, ProgramSource& source, ThreadPool* pool, Bound bound,
                            OptMode mode);

// A ProgramSource that applies one opt list to every kernel it is asked for (whatever the
// request says), then compiles through `inner` as written.
class OptimizingSource : public ProgramSource {
 public:
  OptimizingSource(CachingProgramSource& inner, std::vector<Opt> opts, OptTarget target)
      : inner_(inner), opts_(std::move(opts)), target_(std::move(target)) {}
  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(Device& device,
                                                           std::shared_ptr<const KernelAst> ast,
                                                           const OptimizeRequest&,
                                                           const StopFlag* stop) override;

 private:
  CachingProgramSource& inner_;
  std::vector<Opt> opts_;
  OptTarget target_;
};

}  // namespace uopd::bench

#endif  // UOPD_BENCH_CORPUS_BINDING_H_
