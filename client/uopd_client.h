// uopd::Client: the C++ client library. Thin, synchronous wrappers over the gRPC stubs that turn
// grpc::Status into absl::Status and hide buffer streaming.
#ifndef UOPD_CLIENT_UOPD_CLIENT_H_
#define UOPD_CLIENT_UOPD_CLIENT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "uopd/v1/kernel_service.grpc.pb.h"

namespace uopd {

struct ClientOptions {
  std::string token;  // bearer token: the identity this client acts as ("" = anonymous)
  // TLS (PEM text, not paths): with `tls_root_certs` the channel is TLS, verified against them.
  std::string tls_root_certs;
  std::string tls_cert_chain;   // client certificate, for servers that require one
  std::string tls_private_key;  // its key
  std::string tls_server_name;  // the name to verify the server's certificate for, if not the host
  // A session (OpenSession): opened on the first CreateBuffer or Prepare, named by those calls,
  // and ended when the Client goes (or CloseSession), whereupon the daemon frees every buffer
  // and plan made in it, also when this process is killed. Without one, they stay until freed
  // or idle past the daemon's --idle_ttl (and with a token, outlive this connection). A daemon
  // without sessions (UNIMPLEMENTED) is used without.
  bool session = false;
};

// Safe for concurrent use (gRPC stubs are). One connection of its own: without a token, one
// anonymous identity on the server; with one, the token's identity (shared across clients).
class Client {
 public:
  // Connects lazily to `address` ("127.0.0.1:50051", "unix:/run/uopd.sock").
  explicit Client(const std::string& address, ClientOptions options = {});
  ~Client();  // ends the session, if one is open
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

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
  // The same in one unary call each (payloads up to 4 MiB - 64 KiB): what small copies use.
  absl::Status WriteBufferSmall(const std::string& handle, const std::string& bytes,
                                int64_t offset = 0);
  absl::StatusOr<std::string> ReadBufferSmall(const std::string& handle, int64_t offset = 0,
                                              int64_t length = 0);
  absl::Status FreeBuffer(const std::string& handle);
  absl::StatusOr<v1::ExecuteResponse> Execute(const v1::ExecuteRequest& request);
  absl::StatusOr<v1::PrepareResponse> Prepare(const v1::PrepareRequest& request);
  absl::StatusOr<v1::RunPlanResponse> RunPlan(const v1::RunPlanRequest& request);
  absl::Status ReleasePlan(const std::string& plan_id);
  // The local socket's path and a ticket for it (client/local_channel.h opens the channel).
  absl::StatusOr<v1::OpenLocalChannelResponse> OpenLocalChannel();
  absl::StatusOr<v1::CacheStatsResponse> CacheStats();

  // The session this client's buffers and plans are made in, opened now if it is not yet ("":
  // none, as the option is off or the daemon has no sessions). What a LocalChannel's
  // CreateBuffer names to make its buffer in the session too.
  absl::StatusOr<std::string> Session();
  // Ends the session (the daemon frees what was made in it); the next CreateBuffer or Prepare
  // opens another.
  void CloseSession();

  // Waits until the server answers (or `seconds` pass).
  bool WaitForReady(double seconds);

 private:
  // A context for one call: the token, and a deadline `timeout` from now unless infinite.
  std::unique_ptr<grpc::ClientContext> NewContext(
      absl::Duration timeout = absl::InfiniteDuration()) const;
  template <typename Response, typename Call>
  absl::StatusOr<Response> Unary(Call call, absl::Duration timeout = absl::InfiniteDuration());
  // A call that creates a resource: in the session, when there is one; made again in a new
  // session once if the daemon says the session has ended (restarted, or the connection broke).
  template <typename Response, typename Call>
  absl::StatusOr<Response> Creating(Call call);

  // The open session's call: held open, and cancelled to end the session.
  struct OpenedSession {
    std::string id;
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientReader<v1::OpenSessionResponse>> reader;
  };
  void EndSession(OpenedSession& session);

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KernelService::Stub> kernels_;
  std::unique_ptr<v1::CacheService::Stub> cache_;
  absl::Mutex session_mu_;
  OpenedSession session_ ABSL_GUARDED_BY(session_mu_);
  bool sessions_unsupported_ ABSL_GUARDED_BY(session_mu_) = false;
};

absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace uopd

#endif  // UOPD_CLIENT_UOPD_CLIENT_H_
