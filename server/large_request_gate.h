// LargeRequestGate: requests big enough that parsing them costs (megabytes of kernel ASTs) are
// admitted by what the caller's last one earned, before gRPC parses them.
//
// A client whose large requests are refused for its quota (RESOURCE_EXHAUSTED) would otherwise
// have each of them received, parsed (about 60 ms of a core and ten times its size in memory per
// 5 MB of nodes) and only then refused, as often as it cares to send them: the review's 175,000-
// node compiles took honest throughput to 0.6x that way. After such a refusal the client's next
// large requests are refused unparsed for a back-off that doubles with each refusal (1 s to
// 30 s) and ends with the first large request that is not refused. Small requests (under
// `large_bytes`) always pass.
#ifndef UOPD_SERVER_LARGE_REQUEST_GATE_H_
#define UOPD_SERVER_LARGE_REQUEST_GATE_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace uopd {

// Safe for concurrent use.
class LargeRequestGate {
 public:
  static constexpr int64_t kLargeBytes = int64_t{1} << 20;
  // What parsing a request takes in memory per byte received, charged to the caller while it is
  // parsed and worked on (protobuf objects for nodes of ~20 bytes on the wire).
  static constexpr int64_t kParsedBytesPerWireByte = 16;

  explicit LargeRequestGate(int64_t large_bytes = kLargeBytes,
                            absl::Duration first_backoff = absl::Seconds(1),
                            absl::Duration max_backoff = absl::Seconds(30))
      : large_bytes_(large_bytes), first_backoff_(first_backoff), max_backoff_(max_backoff) {}

  bool IsLarge(int64_t bytes) const { return bytes >= large_bytes_; }
  // OK, or RESOURCE_EXHAUSTED while `client`'s back-off lasts (saying why and how long).
  absl::Status Admit(const std::string& client, int64_t bytes) const;
  // What a large request of `client`'s came to: a quota refusal starts or doubles its back-off,
  // anything else ends it.
  void Record(const std::string& client, int64_t bytes, const absl::Status& outcome);

 private:
  struct BackOff {
    absl::Time until;
    absl::Duration length;
    std::string why;  // the refusal that started it
  };
  const int64_t large_bytes_;
  const absl::Duration first_backoff_;
  const absl::Duration max_backoff_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, BackOff> backoffs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd

#endif  // UOPD_SERVER_LARGE_REQUEST_GATE_H_
