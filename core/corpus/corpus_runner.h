// Running corpus cases and plans through the Device API directly (no daemon): render, compile,
// load, bind buffers, execute, compare with tinygrad's outputs. Used by uopd-conformance and
// the tests.
#ifndef UOPD_CORE_CORPUS_CORPUS_RUNNER_H_
#define UOPD_CORE_CORPUS_CORPUS_RUNNER_H_

#include <string>

#include "absl/status/status.h"
#include "core/corpus/corpus_file.h"
#include "core/device/device.h"
#include "core/plan/execution_plan.h"

namespace uopd {

struct CorpusRunOptions {
  ProgramSource* source = nullptr;  // required
  ThreadPool* pool = nullptr;       // plans run independent kernels here when set
  bool sequential = false;          // run plan kernels one by one in submission order
  OptimizeRequest optimization;     // for every kernel (default: the source's default)
};

// Runs a case (one kernel) or a plan (an ExecutionPlan over its buffers). OK when every output
// matches. Otherwise: FAILED_PRECONDITION with "slot N: element ..." for a wrong result, or the
// error that stopped the run (rendering, compiling, binding, executing).
absl::Status RunCorpusEntry(Device& device, const CorpusEntry& entry,
                            const CorpusRunOptions& options);

// Runs a plan and returns the final bytes of every plan buffer, by buffer id (for comparing two
// ways of running one plan).
absl::StatusOr<absl::flat_hash_map<int64_t, std::string>> RunCorpusPlan(
    Device& device, const v1::CorpusPlan& plan, const CorpusRunOptions& options);

// Builds the plan once, runs it once and compares its outputs with `expected` under `tolerance`
// (FAILED_PRECONDITION naming the first difference), then runs it `runs` more times and returns
// each run's kernel time in seconds: the sum over its kernels of their start-to-end times.
absl::StatusOr<std::vector<double>> TimeCorpusPlan(Device& device, const v1::CorpusPlan& plan,
                                                   const CorpusRunOptions& options, int runs,
                                                   double rtol, double atol);

}  // namespace uopd

#endif  // UOPD_CORE_CORPUS_CORPUS_RUNNER_H_
