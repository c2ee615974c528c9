#include "core/session/local_tickets.h"

#include "absl/strings/str_cat.h"

namespace uopd {

absl::StatusOr<std::string> LocalTickets::Issue(const Identity& who, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(issued_.size()) >= max_outstanding_) DropExpired(now);
  if (static_cast<int>(issued_.size()) >= max_outstanding_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(max_outstanding_,
                     " local-socket tickets are waiting to be used; use them or "
                     "wait for them to expire"));
  }
  std::string ticket = RandomHex128();
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
  if (now > issued.expires) {
    return absl::UnauthenticatedError(absl::StrCat("the local-socket ticket expired (tickets last ",
                                                   absl::FormatDuration(lifetime_),
                                                   "): ask OpenLocalChannel for a new one"));
  }
  return std::move(issued.who);
}

void LocalTickets::DropExpired(absl::Time now) {
  absl::erase_if(issued_, [now](const auto& entry) { return now > entry.second.expires; });
}

}  // namespace uopd
