// ExecutionPlan: kernels bound to buffers and prepared once, then run many times with new
// variable values and no recompilation.
//
// Building a plan fetches each kernel from a ProgramSource (equal ASTs compile once), checks
// every binding (slots bound, dtypes, sizes), and derives the dependencies between kernels from
// the storage each reads and writes: read-after-write, write-after-write and write-after-read.
// A run validates the variable values first, then runs kernels as soon as their dependencies
// finish, independent ones at the same time on the thread pool, or, when every kernel is on one
// device whose runtime has a LaunchQueue (a GPU), submits them all to it at once (streams
// joined by events) and waits once. Results always equal running the kernels one by one in
// submission order.
#ifndef UOPD_CORE_PLAN_EXECUTION_PLAN_H_
#define UOPD_CORE_PLAN_EXECUTION_PLAN_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/plan/device_buffer.h"
#include "core/plan/program_source.h"
#include "core/util/thread_pool.h"

namespace uopd {

// One kernel of a plan, as submitted.
struct KernelBinding {
  std::shared_ptr<const KernelAst> ast;
  Device* device = nullptr;
  std::vector<int> buffers;                  // plan buffer index for each slot
  std::map<std::string, int64_t> fixedvars;  // values a run cannot override
  OptimizeRequest optimization;              // how the kernel is optimized before compiling
};

struct RuntimeVar {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
  int64_t multiple = 1;  // values must be multiples of this
};

// A compiled kernel bound into a plan. Immutable after the plan is built, except `vals`,
// which each run patches (runs of one plan are serialized).
struct PreparedKernel {
  int id = 0;  // position in submission order
  std::shared_ptr<const KernelAst> ast;
  std::shared_ptr<const LoadedProgram> program;  // shared with the ProgramSource
  Device* device = nullptr;
  std::vector<int> buffer_indices;  // into the plan's buffers, in slot order
  std::vector<int> output_indices;  // plan buffers this kernel writes
  std::vector<int64_t> vals;        // positional, in program->spec->var_names order
  std::map<std::string, int64_t> fixedvars;
  std::vector<int> dependencies;         // ids of kernels that must finish first
  std::vector<void*> buffer_ptrs;        // device addresses, by slot
  std::vector<const void*> buffer_ids;   // storage identity, by slot
  std::vector<RuntimeVar> runtime_vars;  // the variables a run must supply (not fixed)
};

struct KernelTiming {
  int id = 0;
  int64_t start_ns = 0;  // from the start of the run
  int64_t end_ns = 0;
};

struct RunOptions {
  // Run kernels one by one in submission order on the calling thread (for comparison).
  bool sequential = false;
  // Asked before each kernel starts (from any thread), and while the run waits for another run
  // of the plan to end; once it returns true, no further kernel starts and the run ends with
  // CANCELLED. Kernels already running finish. Null: never.
  std::function<bool()> cancelled;
  // Once set, no further kernel starts, and kernels running on devices that can be interrupted
  // (the CPU) stop early; the run ends with CANCELLED. Null: never.
  const StopFlag* stop = nullptr;
  // Called once every kernel has finished, before another run of this plan may start: where a
  // caller reads the run's outputs, so that a concurrent run cannot overwrite them half-read.
  // Its error is the run's. Null: nothing.
  std::function<absl::Status()> after_run;
};

// One run at a time per plan (ExecuteWithVars serializes itself); safe to share across threads.
class ExecutionPlan {
 public:
  // Errors: INVALID_ARGUMENT naming the kernel and slot for an unbound slot, a buffer of the
  // wrong dtype, too small, or on another device, or one storage bound to two slots of a kernel
  // that writes it; errors of the ProgramSource (rendering, compiling).
  // `stop` (may be null) abandons compiles once set: the call building the plan is over.
  static absl::StatusOr<std::unique_ptr<ExecutionPlan>> Build(std::vector<BufferView> buffers,
                                                              std::vector<KernelBinding> kernels,
                                                              ProgramSource& source,
                                                              ThreadPool* pool,
                                                              const StopFlag* stop = nullptr);

  // Runs every kernel with `values` for the variables. All values are checked against every
  // kernel's bounds before anything runs (INVALID_ARGUMENT naming the variable and kernel).
  // A kernel that fails stops the run: kernels not started are skipped, and its error is
  // returned with the kernel id.
  absl::StatusOr<std::vector<KernelTiming>> ExecuteWithVars(
      const absl::flat_hash_map<std::string, int64_t>& values, RunOptions options = {});

  const std::vector<BufferView>& buffers() const { return buffers_; }
  const std::vector<PreparedKernel>& kernels() const { return kernels_; }
  // Every variable some kernel needs at run time, with the tightest bounds across kernels.
  std::vector<RuntimeVar> RuntimeVars() const;
  // The memory the plan's own bookkeeping takes (per kernel: bindings, dependencies, values,
  // launch sizes; not the buffers or the programs, which are held and counted elsewhere), for
  // charging it to whoever keeps the plan: a 10,000-kernel plan takes megabytes.
  int64_t BookkeepingBytes() const;

 private:
  ExecutionPlan(std::vector<BufferView> buffers, ThreadPool* pool)
      : buffers_(std::move(buffers)), pool_(pool) {}
  // The state of one parallel run, shared by the caller and the pool tasks helping it.
  struct RunState {
    absl::Mutex mu;
    std::vector<int> remaining;  // unfinished dependencies per kernel
    std::deque<int> ready;
    int finished = 0;
    int in_flight = 0;
    // Set (under mu) when a kernel finishes: the caller, helping the pool meanwhile, looks again.
    std::atomic<bool> settled{false};
    absl::Status error;
    std::vector<KernelTiming> timings;
    ExecutionPlan* plan = nullptr;
    ThreadPool* pool = nullptr;
    RunOptions options;
    std::chrono::steady_clock::time_point start;
    int64_t NowNs() const {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                  start)
          .count();
    }
  };

  absl::StatusOr<std::vector<KernelTiming>> ExecuteLocked(
      const absl::flat_hash_map<std::string, int64_t>& values, const RunOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run_mu_);
  absl::Status Bind(const absl::flat_hash_map<std::string, int64_t>& values);
  absl::StatusOr<std::vector<KernelTiming>> RunOnQueue(const RunOptions& options);
  absl::Status RunKernel(PreparedKernel& kernel, const StopFlag* stop);
  static absl::Status Cancelled(int next_kernel);
  // Runs ready kernels until none is left; the thread that finishes a kernel takes one newly
  // ready kernel itself and hands the others to the pool.
  static void Drain(const std::shared_ptr<RunState>& run);

  std::vector<BufferView> buffers_;
  std::vector<PreparedKernel> kernels_;
  std::vector<std::vector<int>> dependents_;  // the inverse of dependencies
  std::vector<LaunchDims> dims_;              // per kernel, for the current run
  ThreadPool* pool_;
  std::unique_ptr<LaunchQueue> queue_;  // null: kernels run through Program::Execute
  absl::Mutex run_mu_;                  // serializes runs: they patch vals, dims and the queue
  // Whether a run holds run_mu_ or is about to: a run waits for it with an eye on its own stop
  // flag, so it ends with its call instead of when the run before it does.
  absl::Mutex turn_mu_;
  bool running_ ABSL_GUARDED_BY(turn_mu_) = false;
};

}  // namespace uopd

#endif  // UOPD_CORE_PLAN_EXECUTION_PLAN_H_
