// `uopd compile-worker ...`: the daemon started as one of its own compile workers
// (core/worker/compile_worker.h). Loads and warms up the compilers of every backend built in,
// routes LLVM's fatal errors to the daemon, then serves jobs inside the sandbox.
#ifndef UOPD_SERVER_COMPILE_WORKER_MAIN_H_
#define UOPD_SERVER_COMPILE_WORKER_MAIN_H_

#include <string>
#include <vector>

namespace uopd {

inline constexpr char kCompileWorkerCommand[] = "compile-worker";

// The program that runs workers: this binary, as the kernel knows it (still right if the file
// is replaced by an upgrade while the daemon runs).
inline constexpr char kCompileWorkerExecutable[] = "/proc/self/exe";
// The arguments that start a worker of this binary with these limits.
std::vector<std::string> CompileWorkerArgv(int64_t memory_bytes, int64_t max_output_bytes);

// Runs a worker; `argv[1]` is kCompileWorkerCommand. Returns the process exit code.
int CompileWorkerMain(int argc, char** argv);

}  // namespace uopd

#endif  // UOPD_SERVER_COMPILE_WORKER_MAIN_H_
