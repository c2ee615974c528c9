// KernelServiceImpl: the gRPC face of uopd's core. Each method converts the request to core
// types, calls core, and maps the Status back; the logic lives in core/.
#ifndef UOPD_SERVER_KERNEL_SERVICE_H_
#define UOPD_SERVER_KERNEL_SERVICE_H_

#include <functional>

#include "core/ir/limits.h"
#include "core/program/caching_program_source.h"
#include "core/session/local_tickets.h"
#include "core/session/resource_registry.h"
#include "core/util/fair_share.h"
#include "core/util/thread_pool.h"
#include "core/wire/kernel_ast_memo.h"
#include "server/authenticator.h"
#include "server/large_request_gate.h"
#include "server/metrics.h"
#include "server/run_watchdog.h"
#include "server/serve_rpc.h"
#include "uopd/v1/kernel_service.grpc.pb.h"

namespace uopd {

// Makes a (renderer, compiler) pair for an explicit target of a backend ("CUDA", "sm_90"), for
// Compile requests that name a target instead of a device. Null: no such compilers here.
using TargetCompilers =
    std::function<absl::StatusOr<CompilerPair>(const std::string& base, const std::string& target)>;

struct ServiceContext {
  DeviceRegistry& devices;
  CachingProgramSource& programs;
  ResourceRegistry& resources;
  ThreadPool* pool;
  Metrics* metrics;  // may be null
  IrLimits limits;
  TargetCompilers target_compilers;
  RunWatchdog* watchdog = nullptr;  // stops kernels of calls that are over; may be null
  ServerDrain* drain = nullptr;     // counts calls for a SIGTERM drain; may be null
  // Compile RenderedSource programs (client LLVM IR / CUDA C): arbitrary code on this host.
  // Callers also need the client_source right.
  bool allow_client_source = false;
  const Authenticator* auth = nullptr;  // null: one anonymous caller with every right
  KernelAstMemo* asts = nullptr;        // decoded ASTs by wire bytes; null: decode every time
  // The local socket (server/local_socket.h): its path and the tickets that open connections to it.
  // Null tickets: the daemon has none, and OpenLocalChannel says so.
  LocalTickets* local_tickets = nullptr;
  std::string local_socket_path;
  CallLimiter* calls = nullptr;  // calls in flight per client (server/call_limiter.h); may be null
  // A WriteBuffer or ReadBuffer stream that moves no chunk this long is cancelled (0: never).
  absl::Duration stream_idle_timeout = absl::Seconds(60);
  // Requests with kernel ASTs of more than `large_kernel_nodes` nodes have the
  // memory their decode, optimize and render take charged to the caller's quota, and take a
  // turn of `large_kernels` (fair_share.h; null: no bound) while worked on, so one identity's
  // huge kernels take at most those cores, and others' turns come first while it has many.
  FairShare* large_kernels = nullptr;
  int64_t large_kernel_nodes = 4096;
};

// Safe for concurrent use (gRPC calls it from many threads). OpenSession is served through
// gRPC's callback API (server/session_reactor.h), so that an open session holds no thread; the
// other methods are synchronous.
class KernelServiceImpl final
    : public v1::KernelService::WithCallbackMethod_OpenSession<v1::KernelService::Service> {
 public:
  // Compile, Execute and Prepare are served as streamed unary calls (the same calls on the
  // wire), so that a large request is admitted before it is parsed (parse_after_admission.h).
  explicit KernelServiceImpl(ServiceContext ctx);

  grpc::Status ListDevices(grpc::ServerContext* context, const v1::ListDevicesRequest* request,
                           v1::ListDevicesResponse* response) override;
  grpc::Status Compile(grpc::ServerContext* context, const v1::CompileRequest* request,
                       v1::CompileResponse* response) override;
  grpc::Status CreateBuffer(grpc::ServerContext* context, const v1::CreateBufferRequest* request,
                            v1::CreateBufferResponse* response) override;
  grpc::Status WriteBuffer(grpc::ServerContext* context,
                           grpc::ServerReader<v1::WriteBufferChunk>* reader,
                           v1::WriteBufferResponse* response) override;
  grpc::Status ReadBuffer(grpc::ServerContext* context, const v1::ReadBufferRequest* request,
                          grpc::ServerWriter<v1::ReadBufferChunk>* writer) override;
  grpc::Status WriteBufferSmall(grpc::ServerContext* context, const v1::WriteBufferChunk* request,
                                v1::WriteBufferResponse* response) override;
  grpc::Status ReadBufferSmall(grpc::ServerContext* context, const v1::ReadBufferRequest* request,
                               v1::ReadBufferChunk* response) override;
  grpc::Status FreeBuffer(grpc::ServerContext* context, const v1::FreeBufferRequest* request,
                          v1::FreeBufferResponse* response) override;
  grpc::Status Execute(grpc::ServerContext* context, const v1::ExecuteRequest* request,
                       v1::ExecuteResponse* response) override;
  grpc::Status Prepare(grpc::ServerContext* context, const v1::PrepareRequest* request,
                       v1::PrepareResponse* response) override;
  grpc::Status RunPlan(grpc::ServerContext* context, const v1::RunPlanRequest* request,
                       v1::RunPlanResponse* response) override;
  grpc::Status ReleasePlan(grpc::ServerContext* context, const v1::ReleasePlanRequest* request,
                           v1::ReleasePlanResponse* response) override;
  grpc::Status OpenLocalChannel(grpc::ServerContext* context,
                                const v1::OpenLocalChannelRequest* request,
                                v1::OpenLocalChannelResponse* response) override;
  grpc::ServerWriteReactor<v1::OpenSessionResponse>* OpenSession(
      grpc::CallbackServerContext* context, const v1::OpenSessionRequest* request) override;

  // One call of a local-socket connection acting as `who`: the method's own checks, work and
  // answer, as over gRPC, stopping past the call's timeout or once `gone` (the client hung up).
  v1::LocalReply ServeLocal(const Identity& who, const v1::LocalCall& call,
                            std::function<bool()> gone);
  // The same for a call's bytes (a serialized LocalCall): a large one is admitted and the
  // memory its parse takes charged to `who` before it is parsed, as over gRPC
  // (server/parse_after_admission.h).
  v1::LocalReply ServeLocalFrame(const Identity& who, const std::string& frame,
                                 std::function<bool()> gone);

 private:
  // Has gRPC hand `method`'s requests to `serve` through ServeParsedAfterAdmission.
  template <typename Request, typename Response>
  void ParseAfterAdmission(const char* method,
                           grpc::Status (KernelServiceImpl::*serve)(grpc::ServerContext*,
                                                                    const Request*, Response*));

  template <typename Body>
  grpc::Status Serve(const char* method, const grpc::ServerContextBase& context,
                     std::optional<Right> right, Body&& body) {
    return ServeRpc(Env(), method, context, right, std::forward<Body>(body));
  }
  // Serve for a method the local socket serves too, under its name and right from the table
  // both transports read (kernel_service.cc kSharedMethods).
  template <typename Body>
  grpc::Status ServeShared(v1::LocalCall::CallCase call, const grpc::ServerContextBase& context,
                           Body&& body);
  RpcEnv Env() const { return RpcEnv{ctx_.metrics, ctx_.drain, ctx_.auth, ctx_.calls}; }

  // Runs `plan` with `vars`, stopping once `watch` says the call is over, and fills the
  // timings and the bytes of `return_buffers` (indices into the plan's buffers).
  absl::Status Run(ExecutionPlan& plan, const google::protobuf::Map<std::string, int64_t>& vars,
                   const google::protobuf::RepeatedField<int32_t>& return_buffers,
                   const RunWatchdog::Watch& watch,
                   google::protobuf::RepeatedPtrField<v1::KernelTiming>* timings,
                   google::protobuf::RepeatedPtrField<v1::BufferData>* outputs);
  // The bodies of the methods the local socket serves too, after authentication. `session`:
  // the session the call names ("" for none), which the buffer then belongs to.
  absl::Status DoCreateBuffer(const Identity& who, const v1::CreateBufferRequest& request,
                              const std::string& session, v1::CreateBufferResponse* response);
  absl::Status DoWriteBufferSmall(const Identity& who, const v1::WriteBufferChunk& request,
                                  v1::WriteBufferResponse* response);
  absl::Status DoReadBufferSmall(const Identity& who, const v1::ReadBufferRequest& request,
                                 v1::ReadBufferChunk* response);
  absl::Status DoFreeBuffer(const Identity& who, const v1::FreeBufferRequest& request,
                            v1::FreeBufferResponse* response);
  absl::Status DoExecute(const Identity& who, const v1::ExecuteRequest& request, const CallEnd& end,
                         v1::ExecuteResponse* response);
  absl::Status DoRunPlan(const Identity& who, const v1::RunPlanRequest& request, const CallEnd& end,
                         v1::RunPlanResponse* response);
  absl::StatusOr<CompileResult> CompileForTarget(const v1::CompileRequest& request,
                                                 const StopFlag* stop);
  // What a request of `who`'s whose ASTs hold `nodes` nodes holds while it is worked on: for a
  // large one, the front end's memory charged to `who`'s quota (RESOURCE_EXHAUSTED when it does
  // not fit) and a turn of ctx_.large_kernels (CANCELLED once `stop` is set while waiting);
  // nothing for a small one.
  struct LargeKernelReservation {
    std::shared_ptr<const void> memory;
    std::optional<FairShare::Slot> turn;
  };
  absl::StatusOr<LargeKernelReservation> ReserveForLargeKernels(const Identity& who, int64_t nodes,
                                                                const StopFlag* stop);
  absl::StatusOr<CompileResult> CompileSource(const Identity& who, Device& device,
                                              const v1::RenderedSource& source,
                                              const StopFlag* stop);

  ServiceContext ctx_;
  LargeRequestGate large_requests_;
};

}  // namespace uopd

#endif  // UOPD_SERVER_KERNEL_SERVICE_H_
