#include "server/malformed_request_interceptor.h"

#include <string>

#include "grpcpp/support/status.h"

namespace uopd {
namespace {

class MalformedRequestInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequestInterceptor(std::string method) : method_(std::move(method)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::INTERNAL && status.error_message().empty()) {
        methods->ModifySendStatus(MalformedRequest(method_));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
};

class Factory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MalformedRequestInterceptor(info->method() == nullptr ? "?" : info->method());
  }
};

}  // namespace

grpc::Status MalformedRequest(const std::string& method) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      "the request does not parse as the protobuf message " + method + " takes");
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
MalformedRequestInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<Factory>());
  return creators;
}

}  // namespace uopd
