// ServeParsedAfterAdmission: serves a unary method whose requests can be large (kernel ASTs:
// Compile, Execute, Prepare) as gRPC's streamed unary call, which is the same call on the wire
// but hands the handler the request's bytes unparsed. A large request is then admitted
// (LargeRequestGate) and the memory its parse takes charged to the caller before it is parsed;
// gRPC's synchronous API would parse every request before any handler could refuse it.
#ifndef UOPD_SERVER_PARSE_AFTER_ADMISSION_H_
#define UOPD_SERVER_PARSE_AFTER_ADMISSION_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/session/resource_registry.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/large_request_gate.h"
#include "server/malformed_request_interceptor.h"
#include "server/serve_rpc.h"

namespace uopd {

// `serve(context, const Request*, Response*)` is the method as gRPC would call it (it does its
// own admission, authentication and work); `method` is its name ("Compile").
template <typename Request, typename Response, typename Serve>
grpc::Status ServeParsedAfterAdmission(
    const RpcEnv& env, ResourceRegistry& resources, LargeRequestGate& gate, const char* method,
    grpc::ServerContext* context,
    grpc::ServerUnaryStreamer<grpc::ByteBuffer, grpc::ByteBuffer>* stream, Serve&& serve) {
  // Counted by the drain until the answer is written, not only while `serve` runs.
  ServerDrain::Call in_flight(env.drain);
  grpc::ByteBuffer wire;
  if (!stream->Read(&wire)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the request did not arrive");
  }
  const int64_t bytes = static_cast<int64_t>(wire.Length());
  std::optional<std::string> client;  // quota key of a large request's caller
  std::shared_ptr<const void> parse_charge;
  if (gate.IsLarge(bytes)) {
    absl::Status admitted = [&]() -> absl::Status {
      absl::StatusOr<Identity> who = CallerOf(env, *context);
      if (!who.ok()) return who.status();
      client = who->quota_key;
      if (absl::Status open = gate.Admit(*client, bytes); !open.ok()) return open;
      absl::StatusOr<std::shared_ptr<const void>> charge =
          resources.Charge(*who, bytes * LargeRequestGate::kParsedBytesPerWireByte);
      if (!charge.ok()) {
        absl::Status refused(
            charge.status().code(),
            absl::StrCat("parsing a request of ", bytes, " bytes: ", charge.status().message()));
        gate.Record(*client, bytes, refused);
        return refused;
      }
      parse_charge = *std::move(charge);
      return absl::OkStatus();
    }();
    if (!admitted.ok()) {
      RpcScope scope(env.metrics, env.drain, method);
      if (!scope.admitted()) return scope.Refused();
      return scope.Done(ToGrpcStatus(admitted));
    }
  }
  Request request;
  if (!grpc::SerializationTraits<Request>::Deserialize(&wire, &request).ok()) {
    return MalformedRequest(absl::StrCat("/uopd.v1.KernelService/", method));
  }
  Response response;
  grpc::Status status = serve(context, &request, &response);
  if (client.has_value()) {
    gate.Record(
        *client, bytes,
        absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message()));
  }
  if (status.ok()) {
    grpc::ByteBuffer reply;
    bool own = false;
    if (!grpc::SerializationTraits<Response>::Serialize(response, &reply, &own).ok()) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "the response does not serialize");
    }
    stream->Write(reply);
  }
  return status;
}

}  // namespace uopd

#endif  // UOPD_SERVER_PARSE_AFTER_ADMISSION_H_
