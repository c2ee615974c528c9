// CacheServiceImpl: the compiled-byte cache over gRPC, so workers can share entries.
#ifndef UOPD_SERVER_CACHE_SERVICE_H_
#define UOPD_SERVER_CACHE_SERVICE_H_

#include "core/cache/kernel_cache.h"
#include "server/serve_rpc.h"
#include "uopd/v1/kernel_service.grpc.pb.h"

namespace uopd {

// Safe for concurrent use.
class CacheServiceImpl final : public v1::CacheService::Service {
 public:
  // Put is refused (PERMISSION_DENIED) unless `accept_puts`: a client that can put bytes into
  // the cache chooses code other clients' kernels will run, so only trusted peers may.
  CacheServiceImpl(KernelCache& cache, RpcEnv env, bool accept_puts)
      : cache_(cache), env_(env), accept_puts_(accept_puts) {}

  grpc::Status Stats(grpc::ServerContext* context, const v1::CacheStatsRequest* request,
                     v1::CacheStatsResponse* response) override;
  grpc::Status FindMissing(grpc::ServerContext* context, const v1::FindMissingRequest* request,
                           v1::FindMissingResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context, const v1::CacheGetRequest* request,
                   v1::CacheGetResponse* response) override;
  grpc::Status Put(grpc::ServerContext* context, const v1::CachePutRequest* request,
                   v1::CachePutResponse* response) override;

 private:
  template <typename Body>
  grpc::Status Serve(const char* method, const grpc::ServerContext& context,
                     std::optional<Right> right, Body&& body) {
    return ServeRpc(env_, method, context, right, std::forward<Body>(body));
  }

  KernelCache& cache_;
  const RpcEnv env_;
  const bool accept_puts_;
};

}  // namespace uopd

#endif  // UOPD_SERVER_CACHE_SERVICE_H_
