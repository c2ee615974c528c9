// LocalTickets: how a connection to the local socket comes to act as an identity. A caller
// authenticated over gRPC asks for a ticket (OpenLocalChannel); the ticket, presented as the
// first frame of a new local-socket connection, makes that connection act as the same identity,
// anonymous ones included (an anonymous identity is one gRPC connection, which the local socket
// cannot otherwise name). A ticket is 128 random bits, used once, and expires soon after it
// is issued, so one that leaks late is worth nothing.
#ifndef UOPD_CORE_SESSION_LOCAL_TICKETS_H_
#define UOPD_CORE_SESSION_LOCAL_TICKETS_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/session/identity.h"

namespace uopd {

// Safe for concurrent use.
class LocalTickets {
 public:
  // At most `max_outstanding` unredeemed tickets at once, and `max_per_quota_key` of them for
  // one quota key, so that one caller asking for tickets it never uses cannot leave none for
  // the others (issuing more drops expired ones, then refuses with RESOURCE_EXHAUSTED). Each is
  // valid for `lifetime`.
  explicit LocalTickets(absl::Duration lifetime = absl::Seconds(30), int max_outstanding = 4096,
                        int max_per_quota_key = 64)
      : lifetime_(lifetime),
        max_outstanding_(max_outstanding),
        max_per_quota_key_(max_per_quota_key) {}

  absl::StatusOr<std::string> Issue(const Identity& who, absl::Time now = absl::Now());
  // The identity a ticket was issued to, once: UNAUTHENTICATED for a ticket that is unknown,
  // already used or expired.
  absl::StatusOr<Identity> Redeem(const std::string& ticket, absl::Time now = absl::Now());

  absl::Duration lifetime() const { return lifetime_; }

 private:
  struct Issued {
    Identity who;
    absl::Time expires;
  };
  void DropExpired(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(const Identity& who) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration lifetime_;
  const int max_outstanding_;
  const int max_per_quota_key_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Issued> issued_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> per_quota_key_ ABSL_GUARDED_BY(mu_);  // > 0 only
};

}  // namespace uopd

#endif  // UOPD_CORE_SESSION_LOCAL_TICKETS_H_
