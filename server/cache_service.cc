#include "server/cache_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace uopd {
namespace {

absl::Status CheckKey(const std::string& key) {
  bool ok = key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
              return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
            });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("cache key '", key.substr(0, 80), "' is not 64 lowercase hex digits"));
}

}  // namespace

grpc::Status CacheServiceImpl::Stats(grpc::ServerContext*, const v1::CacheStatsRequest*,
                                     v1::CacheStatsResponse* response) {
  RpcScope scope(metrics_, drain_, "CacheStats");
  if (!scope.admitted()) return scope.Refused();
  for (const auto& tier : cache_.tiers()) {
    TierStats s = tier->stats();
    v1::TierStatsInfo* info = response->add_tiers();
    info->set_tier(tier->name());
    info->set_hits(s.hits);
    info->set_misses(s.misses);
    info->set_corrupt(s.corrupt);
    info->set_evictions(s.evictions);
    info->set_puts(s.puts);
    info->set_errors(s.errors);
    info->set_entries(s.entries);
    info->set_bytes(s.bytes);
  }
  for (const auto& [backend, stats] : cache_.compile_stats()) {
    v1::CompileStatsInfo* info = response->add_compiles();
    info->set_backend(backend);
    info->set_compilations(stats.compilations);
    info->set_seconds(stats.seconds);
    info->set_failures(stats.failures);
  }
  return scope.Done(grpc::Status::OK);
}

grpc::Status CacheServiceImpl::FindMissing(grpc::ServerContext*,
                                           const v1::FindMissingRequest* request,
                                           v1::FindMissingResponse* response) {
  RpcScope scope(metrics_, drain_, "CacheFindMissing");
  if (!scope.admitted()) return scope.Refused();
  if (request->keys_size() > 10'000) {
    return scope.Done(ToGrpcStatus(absl::ResourceExhaustedError("at most 10000 keys per call")));
  }
  for (const std::string& key : request->keys()) {
    if (absl::Status s = CheckKey(key); !s.ok()) return scope.Done(ToGrpcStatus(s));
    if (!cache_.GetSerialized(key)) response->add_missing(key);
  }
  return scope.Done(grpc::Status::OK);
}

grpc::Status CacheServiceImpl::Get(grpc::ServerContext*, const v1::CacheGetRequest* request,
                                   v1::CacheGetResponse* response) {
  RpcScope scope(metrics_, drain_, "CacheGet");
  if (!scope.admitted()) return scope.Refused();
  if (absl::Status s = CheckKey(request->key()); !s.ok()) return scope.Done(ToGrpcStatus(s));
  if (auto value = cache_.GetSerialized(request->key())) {
    response->set_found(true);
    response->set_value(*value);
  }
  return scope.Done(grpc::Status::OK);
}

grpc::Status CacheServiceImpl::Put(grpc::ServerContext*, const v1::CachePutRequest* request,
                                   v1::CachePutResponse*) {
  RpcScope scope(metrics_, drain_, "CachePut");
  if (!scope.admitted()) return scope.Refused();
  if (!accept_puts_) {
    return scope.Done(
        ToGrpcStatus(absl::PermissionDeniedError("this server does not accept cache entries from "
                                                 "clients (start it with --cache_accept_puts)")));
  }
  if (absl::Status s = CheckKey(request->key()); !s.ok()) return scope.Done(ToGrpcStatus(s));
  return scope.Done(ToGrpcStatus(cache_.PutSerialized(request->key(), request->value())));
}

}  // namespace uopd
