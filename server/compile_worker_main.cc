#include "server/compile_worker_main.h"

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "backends/cpu/host_target.h"
#include "backends/cpu/llvm_compiler.h"
#include "backends/cpu/llvm_fatal_errors.h"
#include "core/worker/compile_worker.h"
#ifdef UOPD_WITH_CUDA
#include "backends/cuda/nvrtc_compiler.h"
#endif

namespace uopd {
namespace {

absl::StatusOr<std::unique_ptr<Compiler>> MakeCompiler(const std::string& base_device,
                                                       const std::string& target) {
  if (base_device == "CPU") {
    if (target == GetHostTarget().Describe()) return std::make_unique<LlvmCompiler>();
    absl::StatusOr<HostTarget> host = HostTarget::Parse(target);
    if (!host.ok()) return host.status();
    return std::make_unique<LlvmCompiler>(*std::move(host));
  }
#ifdef UOPD_WITH_CUDA
  if (base_device == "CUDA") {
    absl::StatusOr<std::unique_ptr<NvrtcCompiler>> nvrtc = NvrtcCompiler::Create(target);
    if (!nvrtc.ok()) return nvrtc.status();
    return std::unique_ptr<Compiler>(*std::move(nvrtc));
  }
#endif
  return absl::InvalidArgumentError(absl::StrCat("no compiler for ", base_device, " here"));
}

// Compiles a trivial kernel with each backend, so that what they load on first use (NVRTC's
// builtins library, LLVM's target tables) is loaded before the sandbox closes the filesystem.
void WarmUp() {
  ProgramSpec cpu;
  cpu.name = "uopd_warm_up";
  cpu.src = "define i32 @uopd_warm_up(ptr %b, ptr %v) {\n  ret i32 0\n}\n";
  (void)LlvmCompiler().Compile(cpu);
#ifdef UOPD_WITH_CUDA
  if (auto nvrtc = NvrtcCompiler::Create("sm_80"); nvrtc.ok()) {
    ProgramSpec gpu;
    gpu.name = "uopd_warm_up";
    gpu.src = "extern \"C\" __global__ void uopd_warm_up() {}\n";
    (void)(*nvrtc)->Compile(gpu);
  }
#endif
}

void OnLlvmFatalError(const char* reason, bool out_of_memory) {
  if (out_of_memory) {
    FailJobAndExit(absl::StatusCode::kResourceExhausted,
                   absl::StrCat("the compiler ran out of memory: ", reason));
  }
  FailJobAndExit(absl::StatusCode::kInternal, absl::StrCat("LLVM ERROR: ", reason));
}

bool ParseFlag(absl::string_view arg, absl::string_view name, int64_t* value) {
  return absl::ConsumePrefix(&arg, name) && absl::ConsumePrefix(&arg, "=") &&
         absl::SimpleAtoi(arg, value);
}

}  // namespace

std::vector<std::string> CompileWorkerArgv(int64_t memory_bytes, int64_t max_output_bytes) {
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string name = length > 0 ? std::string(self, static_cast<size_t>(length)) : "uopd";
  return {name, kCompileWorkerCommand, absl::StrCat("--parent=", getpid()),
          absl::StrCat("--memory_bytes=", memory_bytes),
          absl::StrCat("--max_output_bytes=", max_output_bytes)};
}

int CompileWorkerMain(int argc, char** argv) {
  CompileWorkerConfig config;
  int64_t parent = 0;
  for (int i = 2; i < argc; ++i) {
    if (!ParseFlag(argv[i], "--parent", &parent) &&
        !ParseFlag(argv[i], "--memory_bytes", &config.sandbox.memory_bytes) &&
        !ParseFlag(argv[i], "--max_output_bytes", &config.max_output_bytes)) {
      std::fprintf(stderr, "uopd compile-worker: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  // Dies with the daemon, and not at all if the daemon is already gone.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (parent != 0 && getppid() != parent) return 1;
  close_range(config.fd + 1, ~0U, 0);  // nothing else of the daemon's
#ifdef UOPD_WITH_CUDA
  config.sandbox.read_only_dirs.push_back(NvrtcCompiler::DefaultIncludeDir());
#endif
  WarmUp();
  RouteLlvmFatalErrors(OnLlvmFatalError);
  return RunCompileWorker(config, MakeCompiler);
}

}  // namespace uopd
