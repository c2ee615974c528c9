// ServeRpc: what every RPC handler does around its body, in one place: drain admission (new
// calls are refused once the server drains), authentication (who is calling), authorization
// (the right the method needs), the bound on one client's calls in flight, timing and recording by
// method and outcome, and the one conversion of absl::Status to grpc::Status.
#ifndef UOPD_SERVER_SERVE_RPC_H_
#define UOPD_SERVER_SERVE_RPC_H_

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/authenticator.h"
#include "server/call_limiter.h"
#include "server/grpc_status.h"
#include "server/metrics.h"
#include "server/server_drain.h"

namespace uopd {

// What the handlers of a service share; every pointer may be null (no metrics, no drain, and
// without an authenticator every caller is one anonymous identity with every right).
struct RpcEnv {
  Metrics* metrics = nullptr;
  ServerDrain* drain = nullptr;
  const Authenticator* auth = nullptr;
  CallLimiter* calls = nullptr;  // calls in flight per client; null: no bound
};

inline absl::StatusOr<Identity> CallerOf(const RpcEnv& env,
                                         const grpc::ServerContextBase& context) {
  if (env.auth == nullptr) return Identity{"anonymous", "anonymous", kAllRights, true};
  return env.auth->Authenticate(context);
}

// How close to its deadline a stopped call counts as past it (below).
inline constexpr std::chrono::milliseconds kDeadlineSlack{50};

// A call stopped at its deadline is DEADLINE_EXCEEDED, whichever part noticed first. gRPC marks
// a call cancelled when the server's deadline timer fires, so a run the watchdog stops then ends
// CANCELLED; a client whose own timer runs late (a loaded machine) received that CANCELLED
// instead of the deadline it had set. `status` is returned unchanged unless it is CANCELLED at
// (or within kDeadlineSlack of) `deadline`.
inline absl::Status AtDeadline(absl::Status status, std::chrono::system_clock::time_point deadline,
                               std::chrono::system_clock::time_point now,
                               absl::string_view method) {
  if (status.code() != absl::StatusCode::kCancelled || now + kDeadlineSlack < deadline) {
    return status;
  }
  return absl::DeadlineExceededError(
      absl::StrCat(method, " passed its deadline (", status.message(), ")"));
}

// Serves one RPC: `body(const Identity&)` returns the call's absl::Status. `right`, when set,
// is what the caller must hold (PERMISSION_DENIED otherwise).
template <typename Body>
grpc::Status ServeRpc(const RpcEnv& env, std::string method, const grpc::ServerContextBase& context,
                      std::optional<Right> right, Body&& body) {
  RpcScope scope(env.metrics, env.drain, method);
  if (!scope.admitted()) return scope.Refused();
  absl::StatusOr<Identity> caller = CallerOf(env, context);
  if (!caller.ok()) return scope.Done(ToGrpcStatus(caller.status()));
  if (right.has_value()) {
    if (absl::Status allowed = caller->Require(*right, absl::StrCat("call ", method));
        !allowed.ok()) {
      return scope.Done(ToGrpcStatus(allowed));
    }
  }
  std::optional<CallLimiter::Admission> admission;
  if (env.calls != nullptr) {
    admission.emplace(env.calls->Admit(caller->quota_key));
    if (!admission->status().ok()) return scope.Done(ToGrpcStatus(admission->status()));
  }
  absl::Status status = std::forward<Body>(body)(*caller);
  return scope.Done(ToGrpcStatus(
      AtDeadline(std::move(status), context.deadline(), std::chrono::system_clock::now(), method)));
}

}  // namespace uopd

#endif  // UOPD_SERVER_SERVE_RPC_H_
