// The load test's attacker in a process of its own, as a real attacker would be (on a host of
// its own). Run inside the load test's process, the attack threads could be put in the idle
// scheduling class, but gRPC's client threads (its pollers and executors) were shared with the
// honest clients and ran at their priority, so part of what the attacker's client cost showed
// as the daemon's doing. Here every thread of the attacker's process, gRPC's included, runs at
// the priority asked for (AttackTargets::nice), set before the first thread starts.
#ifndef UOPD_BENCH_ATTACKER_PROCESS_H_
#define UOPD_BENCH_ATTACKER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "bench/load_attacker.h"

namespace uopd::bench {

// The argument that makes a load test run as the attacker's process (RunAttackerProcess).
inline constexpr char kAttackerProcessFlag[] = "--attacker_process";

class AttackerProcess {
 public:
  // Starts `program` (the load test itself) as the attacker; its attacks are under way when
  // this returns (they start at once, as Attacker::Start's do).
  static absl::StatusOr<AttackerProcess> Start(const std::string& program,
                                               const AttackTargets& targets);
  AttackerProcess(AttackerProcess&& other) noexcept;
  AttackerProcess& operator=(AttackerProcess&&) = delete;
  ~AttackerProcess();  // ends it, outcomes unread, if Stop was not called

  // Ends every attack and returns what the daemon answered ("attack: status code" -> count).
  absl::StatusOr<std::map<std::string, int64_t>> Stop();

 private:
  AttackerProcess(pid_t pid, int to_child, int from_child)
      : pid_(pid), to_child_(to_child), from_child_(from_child) {}

  pid_t pid_ = -1;
  int to_child_ = -1;    // closing it tells the child to stop
  int from_child_ = -1;  // the outcomes, one "count<TAB>outcome" line each
};

// The attacker process's main (argv[1] is kAttackerProcessFlag): attacks until its standard
// input closes, then writes the outcomes to standard output.
int RunAttackerProcess(int argc, char** argv);

}  // namespace uopd::bench

#endif  // UOPD_BENCH_ATTACKER_PROCESS_H_
