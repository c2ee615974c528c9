// Sandbox: what a compile worker gives up before it reads any client input.
//
// A compile worker parses and compiles what clients send; a bug in LLVM or NVRTC, or source that
// asks the compiler to read a file (`.incbin`, `#include`), must not reach the host. Entered once,
// irreversibly, after the compilers are loaded and warmed up:
// - resource limits: address space (a memory blow-up fails the worker, not the host), no core
//   dumps (they would hold client source), few file descriptors;
// - Landlock (Linux 5.13+): no filesystem access except reading the directories listed, no TCP
//   (ABI 4+), no signals or abstract sockets outside the worker (ABI 6+);
// - seccomp: no new sockets, processes, programs, mounts, namespaces, ptrace, kernel modules or
//   signals to other processes; where Landlock is missing, no file opens at all;
// - no new privileges, not dumpable.
// Landlock is used at whatever ABI the kernel offers; seccomp is required.
#ifndef UOPD_CORE_WORKER_SANDBOX_H_
#define UOPD_CORE_WORKER_SANDBOX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace uopd {

struct SandboxPolicy {
  int64_t memory_bytes = int64_t{4} << 30;  // RLIMIT_AS
  int max_open_files = 256;                 // RLIMIT_NOFILE
  std::vector<std::string> read_only_dirs;  // readable below these (e.g. CUDA headers)
};

struct SandboxReport {
  int landlock_abi = 0;  // 0: the kernel has no Landlock
  bool seccomp = false;
  // "landlock abi 7 (filesystem, tcp, signals), seccomp, address space 4096 MiB"
  std::string Describe() const;
};

// Applies `policy` to the calling process (every thread it has, for seccomp; Landlock and
// rlimits are per process or inherited by threads created later). FAILED_PRECONDITION if
// seccomp cannot be installed: a worker must not run unconfined.
absl::StatusOr<SandboxReport> EnterSandbox(const SandboxPolicy& policy);

// The Landlock ABI the running kernel offers, 0 if none.
int LandlockAbi();

// Sets the soft CPU-time limit to `seconds` beyond what the process has used so far (SIGXCPU
// past it, SIGKILL a second later): a runaway compile ends even if nobody is watching.
void LimitCpuSecondsFromNow(int64_t seconds);

}  // namespace uopd

#endif  // UOPD_CORE_WORKER_SANDBOX_H_
