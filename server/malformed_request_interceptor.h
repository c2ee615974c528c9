// MalformedRequestInterceptor: gives a request that does not parse the status it deserves.
//
// When a request's bytes do not parse as its message type, gRPC's synchronous server answers
// INTERNAL with an empty message, the code reserved for server bugs. This interceptor rewrites
// exactly that (INTERNAL without a message: ToGrpcStatus never sends one) into
// INVALID_ARGUMENT naming the method whose request was malformed.
#ifndef UOPD_SERVER_MALFORMED_REQUEST_INTERCEPTOR_H_
#define UOPD_SERVER_MALFORMED_REQUEST_INTERCEPTOR_H_

#include <memory>
#include <string>
#include <vector>

#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/status.h"

namespace uopd {

// What a request to `method` ("/uopd.v1.KernelService/Compile") whose bytes do not parse is
// answered: here and where a handler parses its request itself (parse_after_admission.h).
grpc::Status MalformedRequest(const std::string& method);

// The interceptor creators to give ServerBuilder::experimental().SetInterceptorCreators().
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
MalformedRequestInterceptors();

}  // namespace uopd

#endif  // UOPD_SERVER_MALFORMED_REQUEST_INTERCEPTOR_H_
