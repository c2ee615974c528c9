#include "core/session/local_tickets.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::StatusIs;

Identity Alice() { return Identity{"alice", "alice", kRightRun, /*anonymous=*/false}; }

TEST(LocalTickets, ATicketNamesItsIdentityOnce) {
  LocalTickets tickets;
  auto ticket = tickets.Issue(Alice());
  UOPD_ASSERT_OK(ticket);
  EXPECT_EQ(ticket->size(), 32u);
  auto who = tickets.Redeem(*ticket);
  UOPD_ASSERT_OK(who);
  EXPECT_EQ(who->id, "alice");
  EXPECT_EQ(who->rights, kRightRun);
  EXPECT_TRUE(StatusIs(tickets.Redeem(*ticket), absl::StatusCode::kUnauthenticated,
                       {"unknown or already used"}));
  EXPECT_TRUE(StatusIs(tickets.Redeem(""), absl::StatusCode::kUnauthenticated));
}

TEST(LocalTickets, TicketsExpireAndDifferFromEachOther) {
  LocalTickets tickets(absl::Seconds(30));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  auto first = tickets.Issue(Alice(), t0);
  auto second = tickets.Issue(Alice(), t0);
  UOPD_ASSERT_OK(first);
  UOPD_ASSERT_OK(second);
  EXPECT_NE(*first, *second);
  EXPECT_TRUE(StatusIs(tickets.Redeem(*first, t0 + absl::Seconds(31)),
                       absl::StatusCode::kUnauthenticated, {"expired"}));
  UOPD_EXPECT_OK(tickets.Redeem(*second, t0 + absl::Seconds(29)));
}

TEST(LocalTickets, OutstandingTicketsAreBoundedAndExpiredOnesMakeRoom) {
  LocalTickets tickets(absl::Seconds(30), /*max_outstanding=*/2);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  UOPD_ASSERT_OK(tickets.Issue(Alice(), t0));
  UOPD_ASSERT_OK(tickets.Issue(Alice(), t0));
  EXPECT_TRUE(StatusIs(tickets.Issue(Alice(), t0 + absl::Seconds(1)),
                       absl::StatusCode::kResourceExhausted, {"tickets are waiting"}));
  UOPD_EXPECT_OK(tickets.Issue(Alice(), t0 + absl::Seconds(31)));
}

TEST(LocalTickets, OneQuotaKeyCannotTakeEveryTicket) {
  LocalTickets tickets(absl::Seconds(30), /*max_outstanding=*/10, /*max_per_quota_key=*/2);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  const Identity bob{"bob", "bob", kRightRun, /*anonymous=*/false};
  auto first = tickets.Issue(Alice(), t0);
  UOPD_ASSERT_OK(first);
  UOPD_ASSERT_OK(tickets.Issue(Alice(), t0));
  EXPECT_TRUE(StatusIs(tickets.Issue(Alice(), t0), absl::StatusCode::kResourceExhausted,
                       {"2 local-socket tickets of quota 'alice'"}));
  UOPD_EXPECT_OK(tickets.Issue(bob, t0));  // others still get theirs
  // A ticket used, or expired, is Alice's to ask for again.
  UOPD_ASSERT_OK(tickets.Redeem(*first, t0));
  UOPD_EXPECT_OK(tickets.Issue(Alice(), t0));
  EXPECT_FALSE(tickets.Issue(Alice(), t0).ok());
  UOPD_EXPECT_OK(tickets.Issue(Alice(), t0 + absl::Seconds(31)));
}

}  // namespace
}  // namespace uopd
