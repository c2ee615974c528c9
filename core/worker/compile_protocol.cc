#include "core/worker/compile_protocol.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/worker/frame_io.h"

namespace uopd {

absl::Status SendJob(int fd, const CompileJob& job) {
  const std::string seconds = absl::StrCat(job.cpu_seconds);
  return WriteFrame(fd, {kCompileTag, job.base_device, job.target, job.entry, job.source, seconds});
}

absl::StatusOr<CompileJob> ParseJob(const std::vector<std::string>& frame) {
  CompileJob job;
  if (frame.size() != 6 || frame[0] != kCompileTag ||
      !absl::SimpleAtoi(frame[5], &job.cpu_seconds)) {
    return absl::InternalError("malformed compile job");
  }
  job.base_device = frame[1];
  job.target = frame[2];
  job.entry = frame[3];
  job.source = frame[4];
  return job;
}

absl::Status SendReply(int fd, const CompileReply& reply) {
  const absl::Status& status = reply.result.status();
  const std::string code = absl::StrCat(static_cast<int>(status.code()));
  const std::string exiting = reply.exiting ? "1" : "0";
  if (!reply.result.ok()) {
    return WriteFrame(fd, {kResultTag, code, status.message(), "", "", "", exiting});
  }
  const CompiledKernel& kernel = *reply.result;
  return WriteFrame(fd, {kResultTag, code, "", kernel.bytes, kernel.entry, kernel.ptx, exiting});
}

absl::StatusOr<CompileReply> ParseReply(const std::vector<std::string>& frame) {
  int code = 0;
  if (frame.size() != 7 || frame[0] != kResultTag || !absl::SimpleAtoi(frame[1], &code) ||
      code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::InternalError("malformed compile reply");
  }
  CompileReply reply;
  reply.exiting = frame[6] == "1";
  if (code != 0) {
    reply.result = absl::Status(static_cast<absl::StatusCode>(code), frame[2]);
  } else {
    reply.result = CompiledKernel{frame[3], frame[4], frame[5]};
  }
  return reply;
}

}  // namespace uopd
