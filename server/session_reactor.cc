#include "server/session_reactor.h"

#include "absl/strings/str_cat.h"
#include "core/util/log.h"

namespace uopd {

SessionReactor::SessionReactor(ResourceRegistry& resources, const grpc::Status& opened,
                               std::string session)
    : resources_(resources), session_(opened.ok() ? std::move(session) : "") {
  if (!opened.ok()) {
    finished_ = true;  // nothing else runs before the call is bound to this reactor
    Finish(opened);
    return;
  }
  response_.set_session_id(session_);
  writing_ = true;
  StartWrite(&response_);
}

void SessionReactor::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    // Not sent: the call is over (its cancellation is on its way too).
    if (!ok) ending_ = true;
  }
  if (!ok) EndSession();
  FinishWhenIdle();
}

void SessionReactor::OnCancel() {
  // However the call ended (the client cancelled it, its connection closed, the server is
  // stopping), the session's client is gone: free what it made now, not when gRPC is done.
  EndSession();
  {
    absl::MutexLock lock(&mu_);
    ending_ = true;
  }
  FinishWhenIdle();
}

void SessionReactor::OnDone() {
  EndSession();  // in case the call ended without a cancellation
  delete this;
}

void SessionReactor::EndSession() {
  {
    absl::MutexLock lock(&mu_);
    if (ended_ || session_.empty()) return;
    ended_ = true;
  }
  const int freed = resources_.EndSession(session_);
  Log(freed > 0 ? LogLevel::kInfo : LogLevel::kDebug, "session ended",
      {{"freed", absl::StrCat(freed)}});
}

void SessionReactor::FinishWhenIdle() {
  {
    absl::MutexLock lock(&mu_);
    if (!ending_ || writing_ || finished_) return;
    finished_ = true;
  }
  // OnDone may follow on another thread at once: nothing of this object is touched after.
  Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the session ended"));
}

}  // namespace uopd
