// Metrics: the Prometheus registry of the daemon, served as text at /metrics. RPC counters and
// latency histograms are recorded by the services; cache, device and buffer figures are read
// from their owners at scrape time.
#ifndef UOPD_SERVER_METRICS_H_
#define UOPD_SERVER_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/cache/kernel_cache.h"
#include "core/device/device.h"
#include "core/session/resource_registry.h"
#include "core/worker/compile_worker_pool.h"
#include "grpcpp/support/status.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/grpc_status.h"
#include "server/server_drain.h"

namespace uopd {

// What the live figures are read from at scrape time. Each must outlive the Metrics.
struct MetricsSources {
  const DeviceRegistry& devices;
  KernelCache& cache;
  const ResourceRegistry& resources;
  const CompileWorkerPool* compile_workers = nullptr;  // null: compiles run in process
};

// Safe for concurrent use.
class Metrics {
 public:
  // Starts the HTTP endpoint on `address` ("127.0.0.1:9464"; port 0 picks a free one).
  static absl::StatusOr<std::unique_ptr<Metrics>> Start(const std::string& address,
                                                        MetricsSources sources);
  ~Metrics();

  int port() const;
  void RecordRpc(const std::string& method, const grpc::Status& status, double seconds);
  void RecordKernelsRun(const std::string& device, int64_t count);

 private:
  Metrics() = default;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> live_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  prometheus::Family<prometheus::Counter>* rpcs_ = nullptr;
  prometheus::Family<prometheus::Histogram>* latency_ = nullptr;
  prometheus::Family<prometheus::Counter>* kernels_ = nullptr;
};

// Times one RPC and records it when it goes out of scope, with the status it was given.
class RpcScope {
 public:
  // Counts the call in `drain` (may be null) for as long as the scope lives.
  RpcScope(Metrics* metrics, ServerDrain* drain, std::string method);
  ~RpcScope();
  // False once the server is draining: the handler returns Refused() at once.
  bool admitted() const { return call_.admitted(); }
  grpc::Status Refused();
  // Records `status` as the outcome and returns it, for `return scope.Done(status);`.
  grpc::Status Done(grpc::Status status);

 private:
  ServerDrain::Call call_;
  Metrics* metrics_;
  std::string method_;
  grpc::Status status_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace uopd

#endif  // UOPD_SERVER_METRICS_H_
