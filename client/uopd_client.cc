#include "client/uopd_client.h"

#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace uopd {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

namespace {

// Each Client gets its own connection (not one shared through gRPC's global subchannel pool):
// the server tells anonymous clients apart by connection, so two Clients are two identities.
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address,
                                          const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(8 << 20);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.tls_root_certs.empty()) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = options.tls_root_certs;
    tls.pem_cert_chain = options.tls_cert_chain;
    tls.pem_private_key = options.tls_private_key;
    credentials = grpc::SslCredentials(tls);
    if (!options.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_server_name);
    }
  }
  return grpc::CreateCustomChannel(address, credentials, args);
}

}  // namespace

std::unique_ptr<grpc::ClientContext> Client::NewContext(absl::Duration timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!options_.token.empty()) context->AddMetadata("authorization", "Bearer " + options_.token);
  if (timeout != absl::InfiniteDuration()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
  return context;
}

template <typename Response, typename Call>
absl::StatusOr<Response> Client::Unary(Call call, absl::Duration timeout) {
  std::unique_ptr<grpc::ClientContext> context = NewContext(timeout);
  Response response;
  grpc::Status status = call(context.get(), &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

Client::Client(const std::string& address, ClientOptions options)
    : options_(std::move(options)),
      channel_(OwnChannel(address, options_)),
      kernels_(v1::KernelService::NewStub(channel_)),
      cache_(v1::CacheService::NewStub(channel_)) {}

Client::~Client() { CloseSession(); }

absl::StatusOr<std::string> Client::Session() {
  absl::MutexLock lock(&session_mu_);
  if (!options_.session || sessions_unsupported_) return std::string();
  if (!session_.id.empty()) return session_.id;
  // No deadline: the call is the session, and lives as long as it does.
  OpenedSession opened{"", NewContext(), nullptr};
  opened.reader = kernels_->OpenSession(opened.context.get(), v1::OpenSessionRequest());
  v1::OpenSessionResponse first;
  if (!opened.reader->Read(&first)) {
    const grpc::Status status = opened.reader->Finish();
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      sessions_unsupported_ = true;  // a daemon from before sessions: resources as before
      return std::string();
    }
    return FromGrpcStatus(status);
  }
  opened.id = first.session_id();
  session_ = std::move(opened);
  return session_.id;
}

void Client::EndSession(OpenedSession& session) {
  if (session.reader == nullptr) return;
  session.context->TryCancel();
  v1::OpenSessionResponse ignored;
  while (session.reader->Read(&ignored)) {
  }
  (void)session.reader->Finish();  // CANCELLED: the end asked for
  session = OpenedSession();
}

void Client::CloseSession() {
  absl::MutexLock lock(&session_mu_);
  EndSession(session_);
}

template <typename Response, typename Call>
absl::StatusOr<Response> Client::Creating(Call call) {
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::string> session = Session();
    if (!session.ok()) return session.status();
    std::unique_ptr<grpc::ClientContext> context = NewContext();
    if (!session->empty()) context->AddMetadata("uopd-session", *session);
    Response response;
    const grpc::Status status = call(context.get(), &response);
    if (status.ok()) return response;
    // The daemon no longer knows the session (it restarted, or the session's connection
    // broke): its resources are gone already; this one goes in a new session.
    if (attempt == 0 && !session->empty() && status.error_code() == grpc::StatusCode::NOT_FOUND &&
        status.error_message().find(*session) != std::string::npos) {
      absl::MutexLock lock(&session_mu_);
      if (session_.id == *session) EndSession(session_);
      continue;
    }
    return FromGrpcStatus(status);
  }
}

bool Client::WaitForReady(double seconds) {
  auto deadline = std::chrono::system_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  return channel_->WaitForConnected(deadline);
}

absl::StatusOr<v1::ListDevicesResponse> Client::ListDevices() {
  return Unary<v1::ListDevicesResponse>([&](grpc::ClientContext* c, v1::ListDevicesResponse* r) {
    return kernels_->ListDevices(c, v1::ListDevicesRequest(), r);
  });
}

absl::StatusOr<v1::CompileResponse> Client::Compile(const v1::CompileRequest& request,
                                                    absl::Duration timeout) {
  return Unary<v1::CompileResponse>(
      [&](grpc::ClientContext* c, v1::CompileResponse* r) {
        return kernels_->Compile(c, request, r);
      },
      timeout);
}

absl::StatusOr<std::string> Client::CreateBuffer(const std::string& device, v1::DType::Scalar dtype,
                                                 int64_t size, const std::string& initial) {
  v1::CreateBufferRequest request;
  request.set_device(device);
  request.set_dtype(dtype);
  request.set_size(size);
  request.set_initial(initial);
  auto response =
      Creating<v1::CreateBufferResponse>([&](grpc::ClientContext* c, v1::CreateBufferResponse* r) {
        return kernels_->CreateBuffer(c, request, r);
      });
  if (!response.ok()) return response.status();
  return response->handle();
}

absl::Status Client::WriteBuffer(const std::string& handle, const std::string& bytes,
                                 int64_t offset, int64_t chunk_bytes) {
  std::unique_ptr<grpc::ClientContext> context = NewContext();
  v1::WriteBufferResponse response;
  auto writer = kernels_->WriteBuffer(context.get(), &response);
  v1::WriteBufferChunk chunk;
  chunk.set_handle(handle);
  int64_t at = 0;
  do {
    int64_t size = std::min<int64_t>(chunk_bytes, static_cast<int64_t>(bytes.size()) - at);
    chunk.set_offset(offset + at);
    chunk.set_data(bytes.substr(at, size));
    if (!writer->Write(chunk)) break;  // the server ended the call: Finish says why
    chunk.clear_handle();
    at += size;
  } while (at < static_cast<int64_t>(bytes.size()));
  writer->WritesDone();
  return FromGrpcStatus(writer->Finish());
}

absl::StatusOr<std::string> Client::ReadBuffer(const std::string& handle, int64_t offset,
                                               int64_t length) {
  std::unique_ptr<grpc::ClientContext> context = NewContext();
  v1::ReadBufferRequest request;
  request.set_handle(handle);
  request.set_offset(offset);
  request.set_length(length);
  auto reader = kernels_->ReadBuffer(context.get(), request);
  std::string out;
  v1::ReadBufferChunk chunk;
  while (reader->Read(&chunk)) out += chunk.data();
  grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpcStatus(status);
  return out;
}

absl::Status Client::WriteBufferSmall(const std::string& handle, const std::string& bytes,
                                      int64_t offset) {
  v1::WriteBufferChunk chunk;
  chunk.set_handle(handle);
  chunk.set_offset(offset);
  chunk.set_data(bytes);
  return Unary<v1::WriteBufferResponse>([&](grpc::ClientContext* c, v1::WriteBufferResponse* r) {
           return kernels_->WriteBufferSmall(c, chunk, r);
         })
      .status();
}

absl::StatusOr<std::string> Client::ReadBufferSmall(const std::string& handle, int64_t offset,
                                                    int64_t length) {
  v1::ReadBufferRequest request;
  request.set_handle(handle);
  request.set_offset(offset);
  request.set_length(length);
  auto chunk = Unary<v1::ReadBufferChunk>([&](grpc::ClientContext* c, v1::ReadBufferChunk* r) {
    return kernels_->ReadBufferSmall(c, request, r);
  });
  if (!chunk.ok()) return chunk.status();
  return std::move(*chunk->mutable_data());
}

absl::Status Client::FreeBuffer(const std::string& handle) {
  v1::FreeBufferRequest request;
  request.set_handle(handle);
  return Unary<v1::FreeBufferResponse>([&](grpc::ClientContext* c, v1::FreeBufferResponse* r) {
           return kernels_->FreeBuffer(c, request, r);
         })
      .status();
}

absl::StatusOr<v1::ExecuteResponse> Client::Execute(const v1::ExecuteRequest& request) {
  return Unary<v1::ExecuteResponse>([&](grpc::ClientContext* c, v1::ExecuteResponse* r) {
    return kernels_->Execute(c, request, r);
  });
}

absl::StatusOr<v1::PrepareResponse> Client::Prepare(const v1::PrepareRequest& request) {
  return Creating<v1::PrepareResponse>([&](grpc::ClientContext* c, v1::PrepareResponse* r) {
    return kernels_->Prepare(c, request, r);
  });
}

absl::StatusOr<v1::RunPlanResponse> Client::RunPlan(const v1::RunPlanRequest& request) {
  return Unary<v1::RunPlanResponse>([&](grpc::ClientContext* c, v1::RunPlanResponse* r) {
    return kernels_->RunPlan(c, request, r);
  });
}

absl::Status Client::ReleasePlan(const std::string& plan_id) {
  v1::ReleasePlanRequest request;
  request.set_plan_id(plan_id);
  return Unary<v1::ReleasePlanResponse>([&](grpc::ClientContext* c, v1::ReleasePlanResponse* r) {
           return kernels_->ReleasePlan(c, request, r);
         })
      .status();
}

absl::StatusOr<v1::OpenLocalChannelResponse> Client::OpenLocalChannel() {
  return Unary<v1::OpenLocalChannelResponse>(
      [&](grpc::ClientContext* c, v1::OpenLocalChannelResponse* r) {
        return kernels_->OpenLocalChannel(c, v1::OpenLocalChannelRequest(), r);
      });
}

absl::StatusOr<v1::CacheStatsResponse> Client::CacheStats() {
  return Unary<v1::CacheStatsResponse>([&](grpc::ClientContext* c, v1::CacheStatsResponse* r) {
    return cache_->Stats(c, v1::CacheStatsRequest(), r);
  });
}

}  // namespace uopd
