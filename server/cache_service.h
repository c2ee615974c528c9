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
  // A client that can put bytes into the cache chooses code other clients' kernels will run:
  // Put needs the cache_write right and an entry signed with `cluster_key` (HMAC-SHA256, see
  // entry_signature.h); without a cluster key ("") every Put is refused. Get returns the
  // signature, so an entry can travel from one worker to another.
  CacheServiceImpl(KernelCache& cache, RpcEnv env, std::string cluster_key)
      : cache_(cache), env_(env), cluster_key_(std::move(cluster_key)) {}

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
  const std::string cluster_key_;
};

}  // namespace uopd

#endif  // UOPD_SERVER_CACHE_SERVICE_H_
