#include "server/metrics.h"

#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/accept_guard.h"

namespace uopd {
namespace {

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "OTHER";
  }
}

prometheus::ClientMetric Sample(double value, std::vector<prometheus::ClientMetric::Label> labels,
                                bool counter) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  return m;
}

// Figures owned elsewhere (cache tiers, devices, the resource registry), read at scrape time.
class LiveCollector : public prometheus::Collectable {
 public:
  explicit LiveCollector(MetricsSources sources)
      : devices_(sources.devices),
        cache_(sources.cache),
        resources_(sources.resources),
        workers_(sources.compile_workers) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families;
    AddCacheFamilies(families);
    AddCompileFamilies(families);
    AddDeviceAndClientFamilies(families);
    AddWorkerFamilies(families);
    return families;
  }

 private:
  using MetricType = prometheus::MetricType;

  // Per tier: lookups, evictions, size, errors; for shared tiers their traffic and publishing.
  void AddCacheFamilies(std::vector<prometheus::MetricFamily>& families) const {
    prometheus::MetricFamily requests{"uopd_cache_requests_total",
                                      "Cache lookups by tier and result (hit, miss, corrupt).",
                                      MetricType::Counter,
                                      {}};
    prometheus::MetricFamily evictions{
        "uopd_cache_evictions_total", "Entries evicted by tier.", MetricType::Counter, {}};
    prometheus::MetricFamily bytes{
        "uopd_cache_bytes", "Bytes held by tier.", MetricType::Gauge, {}};
    prometheus::MetricFamily entries{
        "uopd_cache_entries", "Entries held by tier.", MetricType::Gauge, {}};
    prometheus::MetricFamily errors{"uopd_cache_errors_total",
                                    "Failed reads or writes by tier (the tier was skipped).",
                                    MetricType::Counter,
                                    {}};
    prometheus::MetricFamily read_bytes{
        "uopd_cache_read_bytes_total", "Bytes read from a shared tier.", MetricType::Counter, {}};
    prometheus::MetricFamily written_bytes{"uopd_cache_written_bytes_total",
                                           "Bytes published to a shared tier.",
                                           MetricType::Counter,
                                           {}};
    prometheus::MetricFamily breaker{
        "uopd_cache_breaker_open",
        "1 while a shared tier's circuit breaker is open (not asked after failures).",
        MetricType::Gauge,
        {}};
    prometheus::MetricFamily publish{
        "uopd_cache_publish_total",
        "Background publications to a shared tier: published, failed (refused by the store), "
        "dropped (queue full).",
        MetricType::Counter,
        {}};
    prometheus::MetricFamily publish_queue{"uopd_cache_publish_queue_bytes",
                                           "Bytes waiting to be published to a shared tier.",
                                           MetricType::Gauge,
                                           {}};
    for (const auto& tier : cache_.tiers()) {
      TierStats s = tier->stats();
      std::string name = tier->name();
      requests.metric.push_back(Sample(s.hits, {{"tier", name}, {"result", "hit"}}, true));
      requests.metric.push_back(Sample(s.misses, {{"tier", name}, {"result", "miss"}}, true));
      requests.metric.push_back(Sample(s.corrupt, {{"tier", name}, {"result", "corrupt"}}, true));
      requests.metric.push_back(Sample(s.rejected, {{"tier", name}, {"result", "rejected"}}, true));
      evictions.metric.push_back(Sample(s.evictions, {{"tier", name}}, true));
      bytes.metric.push_back(Sample(s.bytes, {{"tier", name}}, false));
      entries.metric.push_back(Sample(s.entries, {{"tier", name}}, false));
      errors.metric.push_back(Sample(s.errors, {{"tier", name}}, true));
      if (!tier->shared()) continue;
      read_bytes.metric.push_back(Sample(s.read_bytes, {{"tier", name}}, true));
      written_bytes.metric.push_back(Sample(s.written_bytes, {{"tier", name}}, true));
      breaker.metric.push_back(Sample(s.breaker_open ? 1 : 0, {{"tier", name}}, false));
      publish.metric.push_back(
          Sample(s.published, {{"tier", name}, {"result", "published"}}, true));
      publish.metric.push_back(
          Sample(s.publish_failed, {{"tier", name}, {"result", "failed"}}, true));
      publish.metric.push_back(
          Sample(s.publish_dropped, {{"tier", name}, {"result", "dropped"}}, true));
      publish_queue.metric.push_back(Sample(s.publish_queue_bytes, {{"tier", name}}, false));
    }
    for (auto* family : {&requests, &evictions, &bytes, &entries, &errors}) {
      families.push_back(*family);
    }
    for (auto* family : {&read_bytes, &written_bytes, &breaker, &publish, &publish_queue}) {
      if (!family->metric.empty()) families.push_back(*family);
    }
  }

  // Compilations and their time by backend (zero for each device's backend before the first).
  void AddCompileFamilies(std::vector<prometheus::MetricFamily>& families) const {
    prometheus::MetricFamily compilations{
        "uopd_compilations_total", "Kernels compiled, by backend.", MetricType::Counter, {}};
    prometheus::MetricFamily compile_seconds{"uopd_compile_seconds_total",
                                             "Seconds spent compiling, by backend.",
                                             MetricType::Counter,
                                             {}};
    for (const auto& [backend, stats] : cache_.compile_stats()) {
      compilations.metric.push_back(Sample(stats.compilations, {{"backend", backend}}, true));
      compile_seconds.metric.push_back(Sample(stats.seconds, {{"backend", backend}}, true));
    }
    if (compilations.metric.empty()) {
      for (Device* device : devices_.devices()) {
        compilations.metric.push_back(
            Sample(0, {{"backend", device->spec().base_device_key()}}, true));
        compile_seconds.metric.push_back(
            Sample(0, {{"backend", device->spec().base_device_key()}}, true));
      }
    }
    families.push_back(compilations);
    families.push_back(compile_seconds);
  }

  // Device memory, client buffers, plans and sessions, and connections refused.
  void AddDeviceAndClientFamilies(std::vector<prometheus::MetricFamily>& families) const {
    prometheus::MetricFamily device_bytes{
        "uopd_device_bytes_in_use", "Device memory allocated through uopd.", MetricType::Gauge, {}};
    for (Device* device : devices_.devices()) {
      device_bytes.metric.push_back(Sample(static_cast<double>(device->allocator().bytes_in_use()),
                                           {{"device", device->name()}}, false));
    }
    RegistryStats r = resources_.stats();
    prometheus::MetricFamily buffer_bytes{"uopd_buffer_bytes",
                                          "Bytes in client buffers.",
                                          MetricType::Gauge,
                                          {Sample(r.buffer_bytes, {}, false)}};
    prometheus::MetricFamily buffers{
        "uopd_buffers", "Client buffers held.", MetricType::Gauge, {Sample(r.buffers, {}, false)}};
    prometheus::MetricFamily plans{
        "uopd_plans", "Prepared plans held.", MetricType::Gauge, {Sample(r.plans, {}, false)}};
    prometheus::MetricFamily sessions{"uopd_sessions",
                                      "Client sessions open (OpenSession calls held open).",
                                      MetricType::Gauge,
                                      {Sample(r.sessions, {}, false)}};
    prometheus::MetricFamily sessions_ended{"uopd_sessions_ended_total",
                                            "Client sessions ended (their client went).",
                                            MetricType::Counter,
                                            {Sample(r.sessions_ended, {}, true)}};
    prometheus::MetricFamily session_freed{
        "uopd_session_freed_total",
        "Buffers and plans freed because the session they were created in ended.",
        MetricType::Counter,
        {Sample(r.session_freed, {}, true)}};
    prometheus::MetricFamily refused{
        "uopd_connections_refused_total",
        "Connections closed as they were accepted because file descriptors ran short.",
        MetricType::Counter,
        {Sample(static_cast<double>(ConnectionsRefusedForDescriptors()), {}, true)}};
    for (auto* family : {&device_bytes, &buffer_bytes, &buffers, &plans, &sessions, &sessions_ended,
                         &session_freed, &refused}) {
      families.push_back(*family);
    }
  }

  void AddWorkerFamilies(std::vector<prometheus::MetricFamily>& families) const {
    if (workers_ != nullptr) {
      CompileWorkerStats w = workers_->stats();
      families.push_back(prometheus::MetricFamily{
          "uopd_compile_worker_events_total",
          "Compile worker events: started, crashed, killed at the time limit, killed because "
          "their call was over, made nicer for compiling past --compile_demote_after.",
          MetricType::Counter,
          {Sample(w.started, {{"event", "started"}}, true),
           Sample(w.crashes, {{"event", "crashed"}}, true),
           Sample(w.timeouts, {{"event", "timed_out"}}, true),
           Sample(w.cancelled, {{"event", "cancelled"}}, true),
           Sample(w.demoted, {{"event", "demoted"}}, true)}});
      families.push_back(prometheus::MetricFamily{"uopd_compile_workers_idle",
                                                  "Compile workers waiting for a job.",
                                                  MetricType::Gauge,
                                                  {Sample(w.idle, {}, false)}});
    }
  }

  const DeviceRegistry& devices_;
  KernelCache& cache_;
  const ResourceRegistry& resources_;
  const CompileWorkerPool* workers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Start(const std::string& address,
                                                        MetricsSources sources) {
  std::unique_ptr<Metrics> metrics(new Metrics);
  metrics->registry_ = std::make_shared<prometheus::Registry>();
  metrics->rpcs_ = &prometheus::BuildCounter()
                        .Name("uopd_rpcs_total")
                        .Help("RPCs handled, by method and status code.")
                        .Register(*metrics->registry_);
  metrics->latency_ = &prometheus::BuildHistogram()
                           .Name("uopd_rpc_duration_seconds")
                           .Help("RPC latency, by method.")
                           .Register(*metrics->registry_);
  metrics->kernels_ = &prometheus::BuildCounter()
                           .Name("uopd_kernels_executed_total")
                           .Help("Kernels run, by device.")
                           .Register(*metrics->registry_);
  metrics->live_ = std::make_shared<LiveCollector>(sources);
  try {
    // civetweb reports bind failures by throwing; this is the one place exceptions are caught.
    // civetweb serves a connection per thread and waits 30 s for a request by default: two
    // clients that never finish their headers took the endpoint. Its own bounds instead: a
    // read or write stalled for 2 s ends the connection, and 8 threads serve the others.
    metrics->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address, "num_threads", "8", "request_timeout_ms", "2000"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("metrics endpoint ", address, ": ", e.what()));
  }
  metrics->exposer_->RegisterCollectable(metrics->registry_);
  metrics->exposer_->RegisterCollectable(metrics->live_);
  return metrics;
}

Metrics::~Metrics() = default;

int Metrics::port() const {
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::RecordRpc(const std::string& method, const grpc::Status& status, double seconds) {
  rpcs_->Add({{"method", method}, {"code", CodeName(status.error_code())}}).Increment();
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  latency_->Add({{"method", method}}, kBuckets).Observe(seconds);
}

void Metrics::RecordKernelsRun(const std::string& device, int64_t count) {
  kernels_->Add({{"device", device}}).Increment(static_cast<double>(count));
}

RpcScope::RpcScope(Metrics* metrics, ServerDrain* drain, std::string method)
    : call_(drain),
      metrics_(metrics),
      method_(std::move(method)),
      start_(std::chrono::steady_clock::now()) {}

grpc::Status RpcScope::Refused() {
  return Done(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
}

RpcScope::~RpcScope() {
  if (metrics_ == nullptr) return;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  metrics_->RecordRpc(method_, status_, seconds);
}

grpc::Status RpcScope::Done(grpc::Status status) {
  status_ = status;
  return status;
}

}  // namespace uopd
