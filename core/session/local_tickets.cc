#include "core/session/local_tickets.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace uopd {

absl::StatusOr<std::string> LocalTickets::Issue(const Identity& who, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto own_full = [&] {
    auto it = per_quota_key_.find(who.quota_key);
    return it != per_quota_key_.end() && it->second >= max_per_quota_key_;
  };
  auto full = [&] { return static_cast<int>(issued_.size()) >= max_outstanding_ || own_full(); };
  if (full()) DropExpired(now);
  if (full()) {
    const bool own = own_full();
    return absl::ResourceExhaustedError(
        absl::StrCat(own ? max_per_quota_key_ : max_outstanding_, " local-socket tickets",
                     own ? absl::StrCat(" of quota '", who.quota_key, "'") : "",
                     " are waiting to be used; use them or wait for them to expire (",
                     absl::FormatDuration(lifetime_), ")"));
  }
  std::string ticket = RandomHex128();
  ++per_quota_key_[who.quota_key];
  issued_[ticket] = Issued{who, now + lifetime_};
  return ticket;
}

absl::StatusOr<Identity> LocalTickets::Redeem(const std::string& ticket, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = issued_.find(ticket);
  if (it == issued_.end()) {
    return absl::UnauthenticatedError(
        "the local-socket ticket is unknown or already used: ask OpenLocalChannel for a new one");
  }
  Issued issued = std::move(it->second);
  issued_.erase(it);
  Forget(issued.who);
  if (now > issued.expires) {
    return absl::UnauthenticatedError(absl::StrCat("the local-socket ticket expired (tickets last ",
                                                   absl::FormatDuration(lifetime_),
                                                   "): ask OpenLocalChannel for a new one"));
  }
  return std::move(issued.who);
}

void LocalTickets::DropExpired(absl::Time now) {
  absl::erase_if(issued_, [&](const auto& entry) {
    if (now <= entry.second.expires) return false;
    Forget(entry.second.who);
    return true;
  });
}

void LocalTickets::Forget(const Identity& who) {
  auto it = per_quota_key_.find(who.quota_key);
  if (it != per_quota_key_.end() && --it->second <= 0) per_quota_key_.erase(it);
}

}  // namespace uopd
