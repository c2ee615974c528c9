// The messages between the daemon and a compile worker, as frames (frame_io.h):
//   worker -> daemon, once at start:  "ready", sandbox description
//   daemon -> worker, per job:        "compile", base device, target, entry, source, cpu seconds
//   worker -> daemon, per job:        "result", status code, message, bytes, entry, ptx, exiting
// `exiting` is "1" when the worker ends after this reply (a fatal compiler error left it in a
// state it cannot go on from).
#ifndef UOPD_CORE_WORKER_COMPILE_PROTOCOL_H_
#define UOPD_CORE_WORKER_COMPILE_PROTOCOL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device/compiler.h"

namespace uopd {

inline constexpr char kReadyTag[] = "ready";
inline constexpr char kCompileTag[] = "compile";
inline constexpr char kResultTag[] = "result";

struct CompileJob {
  std::string base_device;  // "CPU", "CUDA"
  std::string target;       // Compiler::Target()
  std::string entry;
  std::string source;
  int64_t cpu_seconds = 0;  // the worker's own backstop, beyond the daemon's watch
};

struct CompileReply {
  absl::StatusOr<CompiledKernel> result = absl::UnknownError("no reply");
  bool exiting = false;
};

absl::Status SendJob(int fd, const CompileJob& job);
absl::StatusOr<CompileJob> ParseJob(const std::vector<std::string>& frame);
absl::Status SendReply(int fd, const CompileReply& reply);
absl::StatusOr<CompileReply> ParseReply(const std::vector<std::string>& frame);

}  // namespace uopd

#endif  // UOPD_CORE_WORKER_COMPILE_PROTOCOL_H_
