#include "bench/load_attacker.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "client/uopd_client.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/daemon_requests.h"
#include "tests/testing/sample_kernels.h"
#include "uopd/v1/kernel_service.grpc.pb.h"

namespace uopd::bench {
namespace {

using uopd::testing::CompileOf;
using uopd::testing::HeavyKernel;
using uopd::testing::ScaleKernel;

ClientOptions WithToken(const std::string& token) {
  ClientOptions options;
  options.token = token;
  return options;
}

// Sleeps in short steps while `running`, so Stop() is never held up long.
template <typename Running>
void Pause(Running running, std::chrono::milliseconds total) {
  for (auto slept = std::chrono::milliseconds(0); slept < total && running();
       slept += std::chrono::milliseconds(50)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

void SetCallingThreadPriority(int nice) {
  if (nice == AttackTargets::kIdleClass) {
    const sched_param param{};
    (void)sched_setscheduler(gettid(), SCHED_IDLE, &param);
  } else if (nice != 0) {
    (void)setpriority(PRIO_PROCESS, gettid(), nice);
  }
}

void Attacker::Start() {
  running_ = true;
  auto wanted = [this](const std::string& name) {
    return targets_.only.empty() ||
           std::find(targets_.only.begin(), targets_.only.end(), name) != targets_.only.end();
  };
  auto launch = [this](auto&& attack) {
    threads_.emplace_back([this, attack] {
      SetCallingThreadPriority(targets_.nice);
      attack();
    });
  };
  for (int i = 0; i < 2; ++i) {
    if (wanted("slow_compiles")) launch([this, i] { SlowCompiles(i); });
    if (wanted("past_deadline")) launch([this, i] { CompilesPastTheirDeadline(i); });
  }
  if (wanted("silent_streams")) launch([this] { SilentStreams(); });
  if (wanted("memory")) launch([this] { Memory(); });
  if (wanted("big_plans")) launch([this] { BigPlans(); });
  if (wanted("opt_lists")) launch([this] { LongOptLists(); });
  if (wanted("idle_sockets")) launch([this] { IdleSockets(); });
}

void Attacker::Stop() {
  running_ = false;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

std::map<std::string, int64_t> Attacker::Outcomes() {
  std::lock_guard<std::mutex> lock(mu_);
  return outcomes_;
}

void Attacker::Count(const std::string& attack, const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = absl::StrCat(attack, ": ", absl::StatusCodeToString(status.code()));
  // The first answer of each kind, so a report shows why (which limit) as well as what.
  if (!status.ok() && !outcomes_.contains(key) && getenv("UOPD_ATTACK_VERBOSE") != nullptr) {
    std::fprintf(stderr, "%s: %s\n", attack.c_str(), status.ToString().substr(0, 300).c_str());
  }
  ++outcomes_[key];
}

void Attacker::SlowCompiles(int thread) {
  Client client(targets_.address, WithToken(targets_.token));
  for (int k = 0; running(); ++k) {
    // A distinct size each time: a real compile, never a cache hit.
    Count("slow compile",
          client.Compile(CompileOf(HeavyKernel(64 + 100000 * thread + k, 3000)), absl::Seconds(60))
              .status());
  }
}

void Attacker::CompilesPastTheirDeadline(int thread) {
  Client client(targets_.address, WithToken(targets_.token));
  // Built once: the daemon's CPU is measured, not the attacker's (which shares the machine here).
  const v1::CompileRequest request = CompileOf(HeavyKernel(64 + 100000 * thread, 35000));
  while (running()) {
    Count("175k-node compile, 0.3 s deadline",
          client.Compile(request, absl::Seconds(0.3)).status());
  }
}

void Attacker::SilentStreams() {
  // Anonymous: no credential needed. Batches of 200 streams, each held until the daemon ends
  // it (refused at once, or cancelled as idle) or its 3 s deadline passes, then opened again.
  auto stub = v1::KernelService::NewStub(
      grpc::CreateChannel(targets_.address, grpc::InsecureChannelCredentials()));
  struct Silent {
    grpc::ClientContext context;
    v1::WriteBufferResponse response;
    std::unique_ptr<grpc::ClientWriter<v1::WriteBufferChunk>> writer;
  };
  while (running()) {
    std::vector<std::unique_ptr<Silent>> batch;
    for (int i = 0; i < 200; ++i) {
      auto s = std::make_unique<Silent>();
      s->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
      s->writer = stub->WriteBuffer(&s->context, &s->response);
      batch.push_back(std::move(s));
    }
    for (auto& s : batch) {
      const grpc::Status status = s->writer->Finish();
      Count("silent WriteBuffer stream",
            absl::Status(static_cast<absl::StatusCode>(status.error_code()), ""));
    }
  }
}

void Attacker::Memory() {
  Client client(targets_.address, WithToken(targets_.token));
  std::vector<std::string> held;
  while (running()) {
    auto handle = client.CreateBuffer("CPU", v1::DType::UINT8, 64 << 20);
    Count("64 MiB buffers until the quota", handle.status());
    if (handle.ok()) {
      held.push_back(*handle);
      continue;
    }
    v1::CompileRequest search = CompileOf(ScaleKernel(64 << 20, 3.0));
    search.mutable_optimization()->set_mode(v1::Optimization::SEARCH);
    Count("SEARCH with scratch over the quota", client.Compile(search).status());
    Pause([this] { return running(); }, std::chrono::milliseconds(200));
  }
  for (const std::string& handle : held) (void)client.FreeBuffer(handle);
}

void Attacker::BigPlans() {
  Client client(targets_.address, WithToken(targets_.token));
  v1::PrepareRequest prepare;
  auto* out = prepare.add_buffers()->mutable_inline_();
  out->set_dtype(v1::DType::FLOAT32);
  out->set_size(4);
  auto* in = prepare.add_buffers()->mutable_inline_();
  in->set_dtype(v1::DType::FLOAT32);
  in->set_size(4);
  for (int k = 0; k < 5000; ++k) {
    auto* kernel = prepare.add_kernels();
    *kernel->mutable_ast() = ScaleKernel(4, 1.0 + k % 8);
    kernel->add_buffers(0);
    kernel->add_buffers(1);
  }
  std::vector<std::string> held;
  while (running()) {
    auto plan = client.Prepare(prepare);
    Count("5,000-kernel plans until the quota", plan.status());
    if (plan.ok()) {
      held.push_back(plan->plan_id());
    } else {
      Pause([this] { return running(); }, std::chrono::milliseconds(200));
    }
  }
  for (const std::string& plan : held) (void)client.ReleasePlan(plan);
}

void Attacker::LongOptLists() {
  Client client(targets_.address, WithToken(targets_.token));
  for (int k = 0; running(); ++k) {
    v1::CompileRequest request = CompileOf(ScaleKernel(4096, 7.0 + k));
    request.mutable_optimization()->set_mode(v1::Optimization::OPTS);
    for (int i = 0; i < (k % 2 == 0 ? 65 : 64); ++i) {
      v1::Opt* opt = request.mutable_optimization()->add_opts();
      opt->set_op("UPCAST");
      opt->set_axis(0);
      opt->set_arg(1);
    }
    Count(k % 2 == 0 ? "65 opts" : "64 x UPCAST(0, 1)", client.Compile(request).status());
    Pause([this] { return running(); }, std::chrono::milliseconds(20));
  }
}

void Attacker::IdleSockets() {
  static constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  std::vector<int> held;
  for (int i = 0; i < targets_.idle_connections && running(); ++i) {
    const int fd = testing::DaemonProcess::ConnectTcp(targets_.address);
    Count("idle TCP connection (HTTP/2 preface)",
          fd < 0 ? absl::UnavailableError("connect") : absl::OkStatus());
    if (fd < 0) continue;
    (void)!write(fd, kPreface, sizeof(kPreface) - 1);
    held.push_back(fd);
  }
  for (int i = 0; i < 12 && running(); ++i) {
    const int fd = testing::DaemonProcess::ConnectTcp(targets_.metrics_address);
    Count("half-sent /metrics request",
          fd < 0 ? absl::UnavailableError("connect") : absl::OkStatus());
    if (fd < 0) continue;
    static constexpr char kHalf[] = "GET /metr";
    (void)!write(fd, kHalf, sizeof(kHalf) - 1);
    held.push_back(fd);
  }
  while (running()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int fd : held) close(fd);
}

}  // namespace uopd::bench
