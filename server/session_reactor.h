// SessionReactor: the server's end of one OpenSession call, the lease that frees a client's
// buffers and plans when the client goes. gRPC C++ says nothing when a connection closes, but it
// does cancel the calls open on it: so the client holds one call open, and its end (the client
// cancelled it, closed its connection, exited or was killed, or the server is stopping) ends
// the session in the ResourceRegistry.
//
// It is a callback-API reactor rather than a synchronous handler: an open session holds no
// thread, only the call's memory, so the bound on sessions (per quota key and in all, in the
// registry) is a bound on memory, and no number of sessions can take the server's threads.
#ifndef UOPD_SERVER_SESSION_REACTOR_H_
#define UOPD_SERVER_SESSION_REACTOR_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/session/resource_registry.h"
#include "grpcpp/support/server_callback.h"
#include "uopd/v1/kernel_service.pb.h"

namespace uopd {

// Deletes itself when gRPC is done with the call.
class SessionReactor final : public grpc::ServerWriteReactor<v1::OpenSessionResponse> {
 public:
  // `opened` says whether the session `session` was opened in `resources`: if so, its id is
  // sent and the call stays open until it ends; if not, the call ends at once with `opened`.
  SessionReactor(ResourceRegistry& resources, const grpc::Status& opened, std::string session);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  ~SessionReactor() override = default;
  // Ends the session in the registry (once), freeing what was created in it.
  void EndSession();
  // Finishes the call (once) if no write is in flight: gRPC takes one write at a time, and a
  // finish only after it.
  void FinishWhenIdle();

  ResourceRegistry& resources_;
  const std::string session_;  // "" when none was opened
  v1::OpenSessionResponse response_;
  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;  // the call is over: finish it
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;  // the session was ended
};

}  // namespace uopd

#endif  // UOPD_SERVER_SESSION_REACTOR_H_
