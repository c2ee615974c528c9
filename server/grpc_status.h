// The one place absl::Status becomes grpc::Status. Codes map one to one (gRPC and abseil share
// their numbering); UNKNOWN never leaves the server: it becomes INTERNAL.
#ifndef UOPD_SERVER_GRPC_STATUS_H_
#define UOPD_SERVER_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace uopd {

// Never sends an error without a message (an empty INTERNAL is how gRPC itself reports a
// request that does not parse; see malformed_request_interceptor.h).
inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  auto code = static_cast<grpc::StatusCode>(status.code());
  if (status.code() == absl::StatusCode::kUnknown) code = grpc::StatusCode::INTERNAL;
  std::string message(status.message());
  if (message.empty()) message = absl::StatusCodeToString(status.code());
  return grpc::Status(code, message);
}

}  // namespace uopd

#endif  // UOPD_SERVER_GRPC_STATUS_H_
