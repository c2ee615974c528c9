// uopd::Client: the C++ client library. Thin, synchronous wrappers over the gRPC stubs that turn
// grpc::Status into absl::Status and hide buffer streaming.
#ifndef UOPD_CLIENT_UOPD_CLIENT_H_
#define UOPD_CLIENT_UOPD_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "uopd/v1/kernel_service.grpc.pb.h"

namespace uopd {

// Safe for concurrent use (gRPC stubs are). One channel, so one identity on the server.
class Client {
 public:
  // Connects lazily to `address` ("127.0.0.1:50051").
  explicit Client(const std::string& address);

  absl::StatusOr<v1::ListDevicesResponse> ListDevices();
  // `timeout`: the call's deadline from now (DEADLINE_EXCEEDED past it; the server abandons
  // the compile).
  absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest& request,
                                              absl::Duration timeout = absl::InfiniteDuration());
  // Returns the handle.
  absl::StatusOr<std::string> CreateBuffer(const std::string& device, v1::DType::Scalar dtype,
                                           int64_t size, const std::string& initial = "");
  // Streams `bytes` into the buffer starting at `offset`, in chunks of `chunk_bytes`.
  absl::Status WriteBuffer(const std::string& handle, const std::string& bytes, int64_t offset = 0,
                           int64_t chunk_bytes = 1 << 20);
  // Streams the buffer (or [offset, offset + length)) back.
  absl::StatusOr<std::string> ReadBuffer(const std::string& handle, int64_t offset = 0,
                                         int64_t length = 0);
  absl::Status FreeBuffer(const std::string& handle);
  absl::StatusOr<v1::ExecuteResponse> Execute(const v1::ExecuteRequest& request);
  absl::StatusOr<v1::PrepareResponse> Prepare(const v1::PrepareRequest& request);
  absl::StatusOr<v1::RunPlanResponse> RunPlan(const v1::RunPlanRequest& request);
  absl::Status ReleasePlan(const std::string& plan_id);
  absl::StatusOr<v1::CacheStatsResponse> CacheStats();

  // Waits until the server answers (or `seconds` pass).
  bool WaitForReady(double seconds);

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KernelService::Stub> kernels_;
  std::unique_ptr<v1::CacheService::Stub> cache_;
};

absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace uopd

#endif  // UOPD_CLIENT_UOPD_CLIENT_H_
