// ServeRpc: what every RPC handler does around its body, in one place: drain admission (new
// calls are refused once the server drains), authentication (who is calling), authorization
// (the right the method needs), the bound on one client's calls in flight, timing and recording by
// method and outcome, and the one conversion of absl::Status to grpc::Status.
#ifndef UOPD_SERVER_SERVE_RPC_H_
#define UOPD_SERVER_SERVE_RPC_H_

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
  return scope.Done(ToGrpcStatus(std::forward<Body>(body)(*caller)));
}

}  // namespace uopd

#endif  // UOPD_SERVER_SERVE_RPC_H_
