// The compile worker: the process that turns source into bytes for the daemon, inside a
// sandbox, one job at a time, so that whatever a compile does (crash, exhaust memory, loop, read
// a file it was told to) costs this process and one call, never the daemon.
#ifndef UOPD_CORE_WORKER_COMPILE_WORKER_H_
#define UOPD_CORE_WORKER_COMPILE_WORKER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/device/compiler.h"
#include "core/worker/sandbox.h"

namespace uopd {

// The in-process compiler for a base device and target ("CPU", "x86_64-...;znver3;+avx2,...").
using CompilerFactory = std::function<absl::StatusOr<std::unique_ptr<Compiler>>(
    const std::string& base_device, const std::string& target)>;

struct CompileWorkerConfig {
  int fd = 3;  // the socket to the daemon
  SandboxPolicy sandbox;
  int64_t max_output_bytes = int64_t{256} << 20;  // larger objects fail with RESOURCE_EXHAUSTED
};

// Enters the sandbox, says "ready", and serves jobs until the daemon closes the socket; returns
// the process exit code. Compilers are made by `factory` on first use of a target and kept:
// whatever they load lazily must have been loaded before this is called (warm them up).
int RunCompileWorker(const CompileWorkerConfig& config, const CompilerFactory& factory);

// For fatal-error handlers (LLVM's, the allocator's): replies to the job in progress with
// `code` and `message`, marked as the worker's last, and ends the process. Async-signal-unsafe
// but better than the silent abort it replaces; the daemon copes with either.
[[noreturn]] void FailJobAndExit(absl::StatusCode code, const std::string& message);

}  // namespace uopd

#endif  // UOPD_CORE_WORKER_COMPILE_WORKER_H_
