#include "core/worker/compile_worker.h"

#include <unistd.h>

#include <map>
#include <new>

#include "absl/strings/str_cat.h"
#include "core/worker/compile_protocol.h"
#include "core/worker/frame_io.h"

namespace uopd {
namespace {

// The socket of this process's worker loop, for FailJobAndExit (-1 outside a worker).
int g_worker_fd = -1;
const char* g_worker_limit = "";

void OnOutOfMemory() {
  FailJobAndExit(
      absl::StatusCode::kResourceExhausted,
      absl::StrCat("the compiler ran out of memory (the worker's limit is ", g_worker_limit, ")"));
}

}  // namespace

void FailJobAndExit(absl::StatusCode code, const std::string& message) {
  if (g_worker_fd >= 0) {
    CompileReply reply;
    reply.result = absl::Status(code, message);
    reply.exiting = true;
    (void)SendReply(g_worker_fd, reply);
  }
  _exit(70);
}

int RunCompileWorker(const CompileWorkerConfig& config, const CompilerFactory& factory) {
  static std::string limit = absl::StrCat(config.sandbox.memory_bytes >> 20, " MiB");
  g_worker_limit = limit.c_str();
  absl::StatusOr<SandboxReport> sandbox = EnterSandbox(config.sandbox);
  if (!sandbox.ok()) {
    (void)WriteFrame(config.fd, {"error", sandbox.status().ToString()});
    return 1;
  }
  g_worker_fd = config.fd;
  std::set_new_handler(OnOutOfMemory);
  if (!WriteFrame(config.fd, {kReadyTag, sandbox->Describe()}).ok()) return 1;

  std::map<std::pair<std::string, std::string>, std::unique_ptr<Compiler>> compilers;
  // Jobs are bounded by what the daemon sends: its sources pass its own limits first.
  constexpr int64_t kMaxJobBytes = int64_t{1} << 30;
  while (true) {
    absl::StatusOr<std::vector<std::string>> frame = ReadFrame(config.fd, kMaxJobBytes);
    if (!frame.ok()) return 0;  // the daemon closed the socket: done
    absl::StatusOr<CompileJob> job = ParseJob(*frame);
    if (!job.ok()) return 1;
    LimitCpuSecondsFromNow(job->cpu_seconds);
    CompileReply reply;
    auto& compiler = compilers[{job->base_device, job->target}];
    if (compiler == nullptr) {
      absl::StatusOr<std::unique_ptr<Compiler>> made = factory(job->base_device, job->target);
      if (!made.ok()) {
        reply.result = made.status();
        if (!SendReply(config.fd, reply).ok()) return 1;
        compilers.erase({job->base_device, job->target});
        continue;
      }
      compiler = *std::move(made);
    }
    ProgramSpec spec;
    spec.name = job->entry;
    spec.src = std::move(job->source);
    spec.device = job->base_device;
    reply.result = compiler->Compile(spec);
    if (reply.result.ok()) {
      const int64_t size =
          static_cast<int64_t>(reply.result->bytes.size() + reply.result->ptx.size());
      if (size > config.max_output_bytes) {
        reply.result = absl::ResourceExhaustedError(
            absl::StrCat("kernel ", job->entry, " compiled to ", size, " bytes, over the limit of ",
                         config.max_output_bytes));
      }
    }
    if (!SendReply(config.fd, reply).ok()) return 0;
  }
}

}  // namespace uopd
