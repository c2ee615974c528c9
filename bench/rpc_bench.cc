// RPC overhead of one uopd daemon, in one run: an empty RPC (CacheService.FindMissing with no
// keys), a cache-hit Compile of a small kernel, RunPlan of a prepared tiny kernel, Execute of
// the same kernel over buffer handles (what the tinygrad backend sends), and 16-byte copies.
//
//   rpc_bench --daemon PATH [--iterations N]      starts its own daemon on loopback TCP
//   rpc_bench --address ADDR [--iterations N]     a running daemon (HOST:PORT or unix:/path)
//                                                 whose anonymous callers hold compile, run
//                                                 and cache_read
// --tsv prints `row<TAB>name<TAB>p50 us<TAB>p90 us` lines (bench/local_path_bench.py reads them).
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "client/local_channel.h"
#include "client/uopd_client.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/graph_builder.h"

namespace {

// out[i] = in[i] + 1 over 16 floats: a kernel whose run costs next to nothing.
uopd::v1::Graph TinyKernel() {
  uopd::testing::GraphBuilder g;
  int out = g.Buffer(0, uopd::v1::DType::FLOAT32, 16);
  int r = g.Range(g.Index(16), 0);
  int in = g.Buffer(1, uopd::v1::DType::FLOAT32, 16);
  int sum = g.Node(uopd::v1::Node::ADD, uopd::v1::DType::FLOAT32,
                   {g.Load(in, r), g.Float(uopd::v1::DType::FLOAT32, 1.0)});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})});
}

// One timed call and its samples (seconds).
struct Row {
  const char* name;
  std::function<void()> call;
  std::vector<double> seconds;
};

void Print(const std::vector<Row>& rows, int iterations, const std::string& address, bool tsv) {
  using uopd::bench::Percentile;
  const double base = Percentile(rows.front().seconds, 0.5);
  if (!tsv) {
    std::printf("%d interleaved iterations, one daemon (%s), one client connection\n", iterations,
                address.c_str());
    std::printf("%-36s %10s %10s %8s\n", "RPC", "p50 us", "p90 us", "vs empty");
  }
  for (const Row& row : rows) {
    const std::vector<double>& t = row.seconds;
    if (tsv) {
      std::printf("row\t%s\t%.1f\t%.1f\n", row.name, 1e6 * Percentile(t, 0.5),
                  1e6 * Percentile(t, 0.9));
    } else {
      std::printf("%-36s %10.1f %10.1f %7.2fx\n", row.name, 1e6 * Percentile(t, 0.5),
                  1e6 * Percentile(t, 0.9), Percentile(t, 0.5) / base);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 2000;
  bool tsv = false;
  std::string daemon_path, address;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--daemon" && i + 1 < argc)
      daemon_path = argv[++i];
    else if (arg == "--address" && i + 1 < argc)
      address = argv[++i];
    else if (arg == "--iterations" && i + 1 < argc)
      iterations = std::atoi(argv[++i]);
    else if (arg == "--tsv")
      tsv = true;
  }
  if (daemon_path.empty() == address.empty()) {
    std::fprintf(stderr,
                 "usage: rpc_bench (--daemon PATH | --address ADDR) [--iterations N] [--tsv]\n");
    return 2;
  }
  std::unique_ptr<uopd::testing::DaemonProcess> daemon;
  if (!daemon_path.empty()) {
    // FindMissing (the empty RPC) needs the cache_read right.
    daemon = std::make_unique<uopd::testing::DaemonProcess>(
        daemon_path, uopd::testing::TempDir("rpc-bench"),
        std::vector<std::string>{"--anonymous_rights=compile,run,cache_read"});
    if (!daemon->running()) return 1;
    address = daemon->address();
  }

  const uopd::v1::Graph graph = TinyKernel();
  uopd::Client client(address);
  uopd::v1::CompileRequest compile;
  *compile.mutable_ast() = graph;
  if (!client.Compile(compile).ok()) return 1;  // warm: later compiles are memory hits

  uopd::v1::PrepareRequest prepare;
  for (int i = 0; i < 2; ++i) {
    auto* buffer = prepare.add_buffers()->mutable_inline_();
    buffer->set_dtype(uopd::v1::DType::FLOAT32);
    buffer->set_size(16);
  }
  auto* kernel = prepare.add_kernels();
  *kernel->mutable_ast() = graph;
  kernel->add_buffers(0);
  kernel->add_buffers(1);
  auto prepared = client.Prepare(prepare);
  if (!prepared.ok()) return 1;
  uopd::v1::RunPlanRequest run;
  run.set_plan_id(prepared->plan_id());
  // The local socket, where the daemon has one (a unix --listen socket, or --local_socket).
  absl::StatusOr<std::unique_ptr<uopd::LocalChannel>> local_channel =
      uopd::LocalChannel::Open(client);
  if (!local_channel.ok() && !absl::IsFailedPrecondition(local_channel.status())) {
    std::fprintf(stderr, "the local socket: %s\n", local_channel.status().ToString().c_str());
    return 1;
  }

  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto cache = uopd::v1::CacheService::NewStub(channel);
  auto handle = client.CreateBuffer("CPU", uopd::v1::DType::FLOAT32, 4);
  if (!handle.ok()) return 1;
  // Execute as the tinygrad backend sends it: the AST and two buffers that live in the daemon.
  uopd::v1::ExecuteRequest execute;
  for (int i = 0; i < 2; ++i) {
    auto buffer = client.CreateBuffer("CPU", uopd::v1::DType::FLOAT32, 16);
    if (!buffer.ok()) return 1;
    execute.add_buffers()->set_handle(*buffer);
  }
  auto* invocation = execute.add_kernels();
  *invocation->mutable_ast() = graph;
  invocation->add_buffers(0);
  invocation->add_buffers(1);
  const std::string sixteen(16, '\1');
  auto must = [](bool ok) {
    if (!ok) std::abort();
  };
  std::vector<Row> rows = {
      {"empty RPC (FindMissing, no keys)",
       [&] {
         grpc::ClientContext context;
         uopd::v1::FindMissingResponse response;
         must(cache->FindMissing(&context, uopd::v1::FindMissingRequest(), &response).ok());
       }},
      {"Compile, memory cache hit", [&] { must(client.Compile(compile).ok()); }},
      {"RunPlan, 16-element kernel", [&] { must(client.RunPlan(run).ok()); }},
      {"Execute, same kernel, 2 handles", [&] { must(client.Execute(execute).ok()); }},
      {"WriteBuffer stream, 16 bytes", [&] { must(client.WriteBuffer(*handle, sixteen).ok()); }},
      {"WriteBufferSmall (unary), 16 bytes",
       [&] { must(client.WriteBufferSmall(*handle, sixteen).ok()); }},
      {"ReadBuffer stream, 16 bytes", [&] { must(client.ReadBuffer(*handle).ok()); }},
      {"ReadBufferSmall (unary), 16 bytes", [&] { must(client.ReadBufferSmall(*handle).ok()); }},
      {"CreateBuffer + FreeBuffer (two calls)",
       [&] {
         auto created = client.CreateBuffer("CPU", uopd::v1::DType::FLOAT32, 4);
         must(created.ok() && client.FreeBuffer(*created).ok());
       }},
  };
  if (local_channel.ok()) {
    uopd::LocalChannel& local = **local_channel;
    rows.push_back({"local socket: RunPlan", [&] { must(local.RunPlan(run).ok()); }});
    rows.push_back(
        {"local socket: Execute, same kernel", [&] { must(local.Execute(execute).ok()); }});
    rows.push_back({"local socket: CreateBuffer + FreeBuffer", [&] {
                      auto created = local.CreateBuffer("CPU", uopd::v1::DType::FLOAT32, 4);
                      must(created.ok() && local.FreeBuffer(*created).ok());
                    }});
  }
  // Warm, then interleaved, so noise on the shared machine hits every row alike.
  for (int i = 0; i < 100; ++i) {
    for (Row& row : rows) row.call();
  }
  for (int i = 0; i < iterations; ++i) {
    for (Row& row : rows) row.seconds.push_back(uopd::bench::SecondsOf(row.call));
  }
  Print(rows, iterations, address, tsv);
  return 0;
}
