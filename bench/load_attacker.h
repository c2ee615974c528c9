// The security review's attacks, all at once, beside a load test's honest clients: what one
// hostile identity (and anonymous connections, which need no credential) can do to a daemon
// without breaking in. Each attack runs on threads of its own until Stop(); what the daemon
// answered is counted per attack, so the report shows every one refused or bounded.
#ifndef UOPD_BENCH_LOAD_ATTACKER_H_
#define UOPD_BENCH_LOAD_ATTACKER_H_

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace uopd::bench {

struct AttackTargets {
  std::string address;          // the daemon's gRPC address, "127.0.0.1:PORT"
  std::string metrics_address;  // its Prometheus endpoint, "127.0.0.1:PORT"
  std::string token;            // the hostile identity's bearer token (rights: compile, run)
  int idle_connections = 500;   // raw TCP connections that send the HTTP/2 preface and wait
  // Which attacks (the names in kAttacks); empty: all of them.
  std::vector<std::string> only;
  // The priority the attack threads run at. The attacker shares this machine's cores with the
  // daemon and the honest clients, where a real one would run on its own host; at low priority
  // it takes the CPU the others leave, so the figures show what the daemon lets an attacker take
  // rather than what its client process takes. 0: as the honest ones; 1-19: a nice value;
  // kIdleClass (the default): the idle scheduling class (SCHED_IDLE), which runs only on CPU
  // nothing else wants. The load test runs the attacker in a process of its own
  // (attacker_process.h), so that gRPC's client threads run at this priority too.
  static constexpr int kIdleClass = 20;
  int nice = kIdleClass;
};

// Runs the calling thread at `nice` (AttackTargets::nice); threads it starts afterwards inherit
// it (Linux keeps scheduling class and nice value per thread). Best effort.
void SetCallingThreadPriority(int nice);

// The attacks by name (AttackTargets::only, load_test's --attacks).
inline constexpr const char* kAttacks[] = {"slow_compiles", "past_deadline", "silent_streams",
                                           "memory",        "big_plans",     "opt_lists",
                                           "idle_sockets"};

class Attacker {
 public:
  explicit Attacker(AttackTargets targets) : targets_(std::move(targets)) {}
  ~Attacker() { Stop(); }
  Attacker(const Attacker&) = delete;
  Attacker& operator=(const Attacker&) = delete;

  void Start();
  // Ends every attack and lets go of what they hold (connections, streams, plans).
  void Stop();

  // "attack: status code" -> how many times the daemon answered so.
  std::map<std::string, int64_t> Outcomes();

 private:
  void Count(const std::string& attack, const absl::Status& status);
  bool running() const { return running_.load(std::memory_order_relaxed); }

  // Distinct kernels that take LLVM seconds each: the compile workers stay busy.
  void SlowCompiles(int thread);
  // 175,000-node kernels with 0.3 s deadlines: decode, optimize and render past the call's end.
  void CompilesPastTheirDeadline(int thread);
  // Anonymous WriteBuffer streams that never send a chunk: a server thread each, if allowed.
  void SilentStreams();
  // Buffers until the quota refuses, held; and a SEARCH whose scratch is over the quota.
  void Memory();
  // 5,000-kernel plans until the quota refuses their bookkeeping, held.
  void BigPlans();
  // 65 opts, 64 UPCAST(0, 1): the optimizer's bound on work per request.
  void LongOptLists();
  // Idle TCP connections and half-sent HTTP requests to /metrics.
  void IdleSockets();

  const AttackTargets targets_;
  std::atomic<bool> running_{false};
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::map<std::string, int64_t> outcomes_;
};

}  // namespace uopd::bench

#endif  // UOPD_BENCH_LOAD_ATTACKER_H_
