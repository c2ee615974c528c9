// CompileWorkerPool: the daemon's side of out-of-process compilation.
//
// Keeps a set of pre-started, sandboxed worker processes (compile_worker.h) and hands each
// compile to an idle one. A compile that crashes its worker, passes the time limit, or whose call
// is over (its StopFlag set) costs that worker: it is killed and replaced in the background,
// and the call gets a status that says what happened. The daemon itself never runs LLVM or
// NVRTC on client input.
//
// Callers waiting for a worker are served by share (StopFlag::share, the caller's quota key),
// fairly (fair_share.h): a caller with many slow compiles queued does not hold up another's, and
// while others compile one worker stays free of it.
//
// A compile still running after `priority.demote_after` is demoted (core/util/priority.h): its
// worker is made `priority.demoted_nice` nicer, and (up to `workers` such compiles
// at once) hands its turn back while a worker is started in its place. Real kernels compile in
// milliseconds; one that takes seconds then takes the CPU that Executes, cache hits and short
// compiles leave, instead of a core, and its caller's next compile a turn like anyone's. A
// worker's priority cannot be raised again without privilege, so a demoted worker is replaced
// after its compile.
//
// Workers are started from one keeper thread that lives as long as the pool, so their
// parent-death signal (they die with the daemon) is tied to the pool, not to a request thread.
#ifndef UOPD_CORE_WORKER_COMPILE_WORKER_POOL_H_
#define UOPD_CORE_WORKER_COMPILE_WORKER_POOL_H_

#include <sys/types.h>

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/device/compiler.h"
#include "core/util/fair_share.h"
#include "core/util/priority.h"

namespace uopd {

struct CompileWorkerPoolOptions {
  // The program that runs a worker, and its arguments (argv[0] is what `ps` shows); it finds
  // its socket to the daemon as file descriptor 3.
  std::string executable;
  std::vector<std::string> argv;
  int workers = 2;
  // Wall-clock limit of one compile (the worker also gets this much CPU time, plus a margin).
  absl::Duration compile_timeout = absl::Seconds(120);
  // Largest reply accepted from a worker (object + PTX); workers refuse larger ones first.
  int64_t max_reply_bytes = int64_t{256} << 20;
  // Each worker's nice value above the daemon's (priority.nice: with it, compiles take the cores
  // the daemon's threads leave, so a client keeping every worker busy slows others' Executes
  // and cache hits less, and every compile waits longer on a busy daemon; README, Security),
  // and when a long compile is demoted (above).
  CompilePriority priority;
};

struct CompileWorkerStats {
  int64_t compiles = 0;   // jobs answered by a worker (successfully or not)
  int64_t crashes = 0;    // workers that died during a job
  int64_t timeouts = 0;   // workers killed for passing the time limit
  int64_t cancelled = 0;  // workers killed because their call was over
  int64_t demoted = 0;    // compiles demoted for running past demote_after
  int64_t started = 0;    // workers started, including replacements
  int64_t idle = 0;       // workers waiting for a job now
};

// Safe for concurrent use.
class CompileWorkerPool {
 public:
  // Starts the workers and waits (up to 30 s) until the first reports its sandbox; an error if
  // it cannot start or cannot sandbox itself.
  static absl::StatusOr<std::unique_ptr<CompileWorkerPool>> Start(CompileWorkerPoolOptions options);
  // Kills the workers. No Compile may be running (the daemon stops serving first).
  ~CompileWorkerPool();
  CompileWorkerPool(const CompileWorkerPool&) = delete;
  CompileWorkerPool& operator=(const CompileWorkerPool&) = delete;

  // Compiles `spec.src` (entry `spec.name`) with the compiler for `base_device` and `target`
  // in a worker. Besides the compiler's own errors: CANCELLED once `stop` is set,
  // RESOURCE_EXHAUSTED past the time, memory or output limits, INTERNAL when the compiler
  // crashed, UNAVAILABLE when no worker can be started.
  absl::StatusOr<CompiledKernel> Compile(const std::string& base_device, const std::string& target,
                                         const ProgramSpec& spec, const StopFlag* stop);

  // What the workers' sandbox consists of, as the first worker reported it.
  const std::string& sandbox() const { return sandbox_; }
  CompileWorkerStats stats() const;

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    bool demoted = false;   // made nicer: replaced after its compile
    bool off_turn = false;  // demoted and its turn handed back
  };
  explicit CompileWorkerPool(CompileWorkerPoolOptions options)
      : options_(std::move(options)), turns_(options_.workers, ReserveWindow(options_.priority)) {}

  // How long a worker is kept from one caller for another served lately (fair_share.h): while
  // long compiles keep their turns, long enough for that caller's next one (5 s); with
  // demotion, as long as a compile keeps its turn before it is demoted. A busy caller of short
  // compiles would otherwise be held to one worker fewer for as long as another compiles slowly.
  static absl::Duration ReserveWindow(const CompilePriority& priority) {
    return priority.demote_after > absl::ZeroDuration() ? priority.demote_after : absl::Seconds(5);
  }

  void KeeperLoop();
  // Starts one worker and waits for its "ready"; the sandbox description on success.
  absl::StatusOr<std::string> SpawnWorker(Worker* worker);
  // Takes a worker for `share`, waiting for one; CANCELLED if `stop` is set first.
  absl::StatusOr<Worker> Acquire(const std::string& share, const StopFlag* stop);
  // Gives a worker `share` used back.
  void Release(Worker worker, const std::string& share);
  // Kills the worker `share` used (if alive) and has the keeper reap and replace it. Returns how
  // it ended if it had already died ("signal 11 (Segmentation fault)", "exit code 70"), else "".
  std::string Discard(Worker worker, const std::string& share);
  // Demotes the compile `worker` runs for `share` (above).
  void Demote(Worker* worker, const std::string& share);

  const CompileWorkerPoolOptions options_;
  std::string sandbox_;
  // Whose turn a worker is: one turn per worker, shared fairly between callers (fair_share.h).
  FairShare turns_;
  mutable absl::Mutex mu_;
  std::deque<Worker> idle_ ABSL_GUARDED_BY(mu_);
  int alive_ ABSL_GUARDED_BY(mu_) = 0;     // started and not discarded
  int off_turn_ ABSL_GUARDED_BY(mu_) = 0;  // demoted compiles running without a turn
  std::string spawn_error_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  CompileWorkerStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread keeper_;
};

}  // namespace uopd

#endif  // UOPD_CORE_WORKER_COMPILE_WORKER_POOL_H_
