#include "server/kernel_service.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/cache/program_codec.h"
#include "core/util/sha256.h"
#include "core/util/status_macros.h"
#include "core/wire/opt_codec.h"
#include "server/parse_after_admission.h"
#include "server/request_builder.h"
#include "server/session_reactor.h"

namespace uopd {
namespace {

constexpr int64_t kDefaultChunk = 1 << 20;
constexpr int64_t kMaxChunk = (4 << 20) - (64 << 10);  // under the 4 MiB message limit
// Outputs returned inline must fit one response.
constexpr int64_t kMaxInlineReturn = (4 << 20) - (256 << 10);
// What one returned buffer adds to a reply beside its bytes (its index and framing), and how
// much of the 256 KiB the reply keeps beside kMaxInlineReturn such overheads may take: many
// empty buffers count too.
constexpr int64_t kReturnedBufferOverhead = 16;
constexpr int64_t kMaxReturnOverhead = 128 << 10;

// The session a call names in its `uopd-session` metadata (OpenSession), "" for none.
std::string SessionOf(const grpc::ServerContextBase& context) {
  auto found = context.client_metadata().find("uopd-session");
  if (found == context.client_metadata().end()) return "";
  return std::string(found->second.data(), found->second.size());
}

absl::Status CheckAlive(const grpc::ServerContext& context) {
  if (context.IsCancelled()) return absl::CancelledError("the call was cancelled");
  return absl::OkStatus();
}

void FillTimings(const std::vector<KernelTiming>& timings,
                 google::protobuf::RepeatedPtrField<v1::KernelTiming>* out) {
  for (const KernelTiming& t : timings) {
    v1::KernelTiming* timing = out->Add();
    timing->set_kernel(t.id);
    timing->set_start_ns(t.start_ns);
    timing->set_end_ns(t.end_ns);
  }
}

absl::Status FillOutputs(const std::vector<BufferView>& buffers,
                         const google::protobuf::RepeatedField<int32_t>& which,
                         google::protobuf::RepeatedPtrField<v1::BufferData>* out) {
  int64_t total = 0;
  // Each buffer once: a reply's size is then bounded by the plan's buffers (4 MB of indexes of
  // one empty buffer made a reply of 4 million entries, ~100x the request, charged to no one).
  std::vector<bool> named(buffers.size(), false);
  for (int32_t index : which) {
    if (index < 0 || index >= static_cast<int>(buffers.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("return_buffers names buffer ", index, ", which does not exist"));
    }
    if (named[index]) {
      return absl::InvalidArgumentError(
          absl::StrCat("return_buffers names buffer ", index, " twice"));
    }
    named[index] = true;
    total += static_cast<int64_t>(buffers[index].bytes());
  }
  if (total > kMaxInlineReturn ||
      static_cast<int64_t>(which.size()) * kReturnedBufferOverhead > kMaxReturnOverhead) {
    return absl::ResourceExhaustedError(
        absl::StrCat("returning ", which.size(), " buffers of ", total,
                     " bytes inline exceeds the message limit; bind a buffer handle and "
                     "read it with ReadBuffer"));
  }
  for (int32_t index : which) {
    const BufferView& view = buffers[index];
    v1::BufferData* data = out->Add();
    data->set_buffer(index);
    std::string* bytes = data->mutable_data();
    bytes->resize(view.bytes());
    UOPD_RETURN_IF_ERROR(view.CopyOut(0, bytes->data(), static_cast<int64_t>(view.bytes())));
  }
  return absl::OkStatus();
}

// The method a local-socket call names, as metrics and errors name it.
// The methods served over both gRPC and the local socket: the name they are counted and refused
// under and the right they need, one entry each, which both transports read (the bodies are the
// Do* functions both call).
struct SharedMethod {
  v1::LocalCall::CallCase call;
  const char* name;
  Right right;
};
constexpr SharedMethod kSharedMethods[] = {
    {v1::LocalCall::kRunPlan, "RunPlan", kRightRun},
    {v1::LocalCall::kExecute, "Execute", kRightRun},
    {v1::LocalCall::kCreateBuffer, "CreateBuffer", kRightRun},
    {v1::LocalCall::kFreeBuffer, "FreeBuffer", kRightRun},
    {v1::LocalCall::kWriteBufferSmall, "WriteBufferSmall", kRightRun},
    {v1::LocalCall::kReadBufferSmall, "ReadBufferSmall", kRightRun},
};

// The entry of `call`; null for a call that names no method.
const SharedMethod* SharedMethodOf(v1::LocalCall::CallCase call) {
  for (const SharedMethod& method : kSharedMethods) {
    if (method.call == call) return &method;
  }
  return nullptr;
}

// Plans stop starting kernels, and the kernels running stop, once the watchdog finds the call
// cancelled or past its deadline (within its period, 5 ms). The run does not ask gRPC itself:
// ServerContext::IsCancelled on a synchronous call polls the completion queue, ~25 µs a time,
// more than a tiny RunPlan's whole work.
RunOptions UntilStopped(const RunWatchdog::Watch& watch) {
  RunOptions options;
  options.stop = watch.flag();
  return options;
}

// Memory reserved per node of a large kernel while it is decoded, optimized and rendered.
constexpr int64_t kFrontEndBytesPerNode = 8 << 10;

// Nodes in the ASTs of `kernels` larger than `large` nodes, together: a plan of many real
// kernels is not a large kernel.
int64_t NodesOfLargeKernels(const google::protobuf::RepeatedPtrField<v1::KernelInvocation>& kernels,
                            int64_t large) {
  int64_t nodes = 0;
  for (const v1::KernelInvocation& kernel : kernels) {
    if (kernel.ast().nodes_size() > large) nodes += kernel.ast().nodes_size();
  }
  return nodes;
}

// Work done for a call that compiles acts for its caller: a search, or the timing of the
// heuristics' close candidates, runs kernels on scratch buffers charged to the caller's quota
// while held, as its buffers are (a SEARCH with a 64 MiB quota took 3 GB before); and the compile
// workers take the callers with the fewest compiles running first (three slow compiles of one
// client held both workers while another's tiny compile missed its deadline).
void ActForCaller(RunWatchdog::Watch& watch, ResourceRegistry& resources, const Identity& who) {
  watch.set_scratch_charger(
      [&resources, who](int64_t bytes) { return resources.Charge(who, bytes); });
  watch.set_share(who.quota_key);
}

// A stream's progress, watched: the call is cancelled once no message has moved for `idle`
// (0: never), so a Read or a Write blocked on a client that went silent returns and gives its
// thread back. A synchronous stream cannot wait with a timeout of its own.
class StreamProgress {
 public:
  StreamProgress(RunWatchdog* watchdog, grpc::ServerContext* context, absl::Duration idle)
      : idle_ns_(absl::ToInt64Nanoseconds(idle)),
        last_ns_(NowNs()),
        watch_(watchdog, CallEnd{context->deadline(), [this, context] {
                                   if (idle_ns_ > 0 && NowNs() - last_ns_.load() > idle_ns_) {
                                     stalled_.store(true);
                                     context->TryCancel();
                                     return true;
                                   }
                                   return context->IsCancelled();
                                 }}) {}
  void Moved() { last_ns_.store(NowNs()); }
  // Why the call ended early, once it has.
  absl::Status Ended(absl::string_view waiting_for) const {
    if (!stalled_.load()) return absl::CancelledError("the call was cancelled");
    return absl::DeadlineExceededError(
        absl::StrCat("no ", waiting_for, " for ", absl::FormatDuration(absl::Nanoseconds(idle_ns_)),
                     " (--stream_idle_timeout)"));
  }

 private:
  static int64_t NowNs() { return absl::GetCurrentTimeNanos(); }
  const int64_t idle_ns_;
  std::atomic<int64_t> last_ns_;
  std::atomic<bool> stalled_{false};
  RunWatchdog::Watch watch_;  // last: its check reads the members above
};

}  // namespace

absl::Status KernelServiceImpl::Run(ExecutionPlan& plan,
                                    const google::protobuf::Map<std::string, int64_t>& vars,
                                    const google::protobuf::RepeatedField<int32_t>& return_buffers,
                                    const RunWatchdog::Watch& watch,
                                    google::protobuf::RepeatedPtrField<v1::KernelTiming>* timings,
                                    google::protobuf::RepeatedPtrField<v1::BufferData>* outputs) {
  absl::flat_hash_map<std::string, int64_t> values(vars.begin(), vars.end());
  RunOptions options = UntilStopped(watch);
  // Read while the plan is still held: a concurrent run of it would overwrite them.
  options.after_run = [&] { return FillOutputs(plan.buffers(), return_buffers, outputs); };
  UOPD_ASSIGN_OR_RETURN(auto run, plan.ExecuteWithVars(values, std::move(options)));
  if (ctx_.metrics != nullptr) {
    for (const PreparedKernel& kernel : plan.kernels()) {
      ctx_.metrics->RecordKernelsRun(kernel.device->name(), 1);
    }
  }
  FillTimings(run, timings);
  return absl::OkStatus();
}

template <typename Body>
grpc::Status KernelServiceImpl::ServeShared(v1::LocalCall::CallCase call,
                                            const grpc::ServerContextBase& context, Body&& body) {
  const SharedMethod& method = *SharedMethodOf(call);
  return Serve(method.name, context, method.right, std::forward<Body>(body));
}

grpc::Status KernelServiceImpl::ListDevices(grpc::ServerContext* context,
                                            const v1::ListDevicesRequest*,
                                            v1::ListDevicesResponse* response) {
  return Serve("ListDevices", *context, std::nullopt, [&](const Identity&) {
    for (Device* device : ctx_.devices.devices()) {
      v1::DeviceInfo* info = response->add_devices();
      info->set_name(device->name());
      info->set_base_key(device->spec().base_device_key());
      info->set_compile_target(device->compiler().Target());
      info->set_compiler(device->compiler().Identity());
      info->set_memory_bytes(device->memory_bytes());
      info->set_bytes_in_use(device->allocator().bytes_in_use());
      info->set_threads(device->threads());
      info->set_description(device->description());
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<KernelServiceImpl::LargeKernelReservation> KernelServiceImpl::ReserveForLargeKernels(
    const Identity& who, int64_t nodes, const StopFlag* stop) {
  LargeKernelReservation reservation;
  if (nodes <= ctx_.large_kernel_nodes) return reservation;
  // Decoding, optimizing and rendering take memory in proportion to the nodes (~5 KiB each at
  // the peak, measured on 175,000-node kernels): the caller's, like its buffers.
  absl::StatusOr<std::shared_ptr<const void>> memory =
      ctx_.resources.Charge(who, nodes * kFrontEndBytesPerNode);
  if (!memory.ok()) {
    return WithContext(memory.status(),
                       absl::StrCat("working on kernels of ", nodes, " nodes (",
                                    kFrontEndBytesPerNode, " bytes each while compiled)"));
  }
  reservation.memory = *std::move(memory);
  if (ctx_.large_kernels == nullptr) return reservation;
  reservation.turn = ctx_.large_kernels->Take(who.quota_key, [stop] { return stop->stopped(); });
  if (!reservation.turn.has_value()) {
    return absl::CancelledError(
        absl::StrCat("the call ended while waiting for its turn: kernels of more than ",
                     ctx_.large_kernel_nodes, " nodes (this request: ", nodes, ") are worked on ",
                     ctx_.large_kernels->slots(), " at a time"));
  }
  return reservation;
}

absl::StatusOr<CompileResult> KernelServiceImpl::CompileForTarget(const v1::CompileRequest& request,
                                                                  const StopFlag* stop) {
  // No device needed: a CPU-only server compiles for GPUs it does not have.
  if (!request.has_ast()) return absl::InvalidArgumentError("compiling for a target needs an ast");
  UOPD_ASSIGN_OR_RETURN(DeviceSpec spec,
                        DeviceSpec::Parse(DeviceOrDefault(request.device(), "CUDA")));
  if (!ctx_.target_compilers) {
    return absl::FailedPreconditionError("this server has no compilers for explicit targets");
  }
  UOPD_ASSIGN_OR_RETURN(CompilerPair pair,
                        ctx_.target_compilers(spec.base_device_key(), request.target()));
  UOPD_ASSIGN_OR_RETURN(auto ast, DecodeAst(ctx_.asts, request.ast(), ctx_.limits));
  UOPD_ASSIGN_OR_RETURN(OptimizeRequest optimization,
                        OptimizationOf(request.optimization(), request.ast()));
  return ctx_.programs.Compile(spec.base_device_key(), pair, std::move(ast), optimization, stop);
}

absl::StatusOr<CompileResult> KernelServiceImpl::CompileSource(const Identity& who, Device& device,
                                                               const v1::RenderedSource& source,
                                                               const StopFlag* stop) {
  // Source rendered by the client: keyed on the source and its stated metadata.
  if (!ctx_.allow_client_source) {
    return absl::PermissionDeniedError(
        "compiling client-rendered source is off: such source can read host files and run "
        "arbitrary code in the daemon (start uopd with --allow_client_source to permit it); "
        "send the kernel AST instead");
  }
  UOPD_RETURN_IF_ERROR(who.Require(kRightClientSource, "compile client-rendered source"));
  if (source.entry().empty()) return absl::InvalidArgumentError("source.entry is empty");
  // Keyed on the wire form of what the client stated, as a cache entry would hold it.
  v1::CachedKernel stated;
  *stated.mutable_metadata() = source.metadata();
  stated.mutable_metadata()->set_name(source.entry());
  stated.set_source(source.src());
  stated.set_entry(source.entry());
  absl::StatusOr<ProgramSpec> spec = DecodeProgramMetadata(stated.metadata());
  if (!spec.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("source.metadata: ", spec.status().message()));
  }
  spec->src = source.src();
  return ctx_.programs.CompileSource(device, *std::move(spec),
                                     DigestToHex(Sha256Of(stated.SerializeAsString())), stop);
}

KernelServiceImpl::KernelServiceImpl(ServiceContext ctx) : ctx_(ctx) {
  ParseAfterAdmission("Compile", &KernelServiceImpl::Compile);
  ParseAfterAdmission("Execute", &KernelServiceImpl::Execute);
  ParseAfterAdmission("Prepare", &KernelServiceImpl::Prepare);
}

template <typename Request, typename Response>
void KernelServiceImpl::ParseAfterAdmission(
    const char* method,
    grpc::Status (KernelServiceImpl::*serve)(grpc::ServerContext*, const Request*, Response*)) {
  // gRPC numbers a service's methods in the order the .proto declares them.
  const int index = v1::CompileRequest::descriptor()
                        ->file()
                        ->FindServiceByName("KernelService")
                        ->FindMethodByName(method)
                        ->index();
  MarkMethodStreamed(
      index, new grpc::internal::StreamedUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                 [this, method, serve](
                     grpc::ServerContext* context,
                     grpc::ServerUnaryStreamer<grpc::ByteBuffer, grpc::ByteBuffer>* stream) {
                   return ServeParsedAfterAdmission<Request, Response>(
                       Env(), ctx_.resources, large_requests_, method, context, stream,
                       [this, serve](grpc::ServerContext* c, const Request* q, Response* r) {
                         return (this->*serve)(c, q, r);
                       });
                 }));
}

grpc::Status KernelServiceImpl::Compile(grpc::ServerContext* context,
                                        const v1::CompileRequest* request,
                                        v1::CompileResponse* response) {
  return Serve("Compile", *context, kRightCompile, [&](const Identity& who) -> absl::Status {
    // A compile whose call is over is abandoned (its worker killed), freeing the core.
    RunWatchdog::Watch watch(ctx_.watchdog, *context);
    ActForCaller(watch, ctx_.resources, who);
    UOPD_ASSIGN_OR_RETURN(LargeKernelReservation reserved,
                          ReserveForLargeKernels(who, request->ast().nodes_size(), watch.flag()));
    CompileResult result;
    if (!request->target().empty()) {
      UOPD_ASSIGN_OR_RETURN(result, CompileForTarget(*request, watch.flag()));
    } else {
      UOPD_ASSIGN_OR_RETURN(Device * device, ctx_.devices.Get(DeviceOrDefault(request->device())));
      if (request->has_ast()) {
        UOPD_ASSIGN_OR_RETURN(OptimizeRequest optimization,
                              OptimizationOf(request->optimization(), request->ast()));
        // A search runs candidates on the device with scratch buffers: the run right's work,
        // whether asked for or the server's default (a compile-only identity searched through
        // DEFAULT on a daemon started with --optimization=search: a review helper's finding).
        if (ctx_.programs.optimizer().Resolve(optimization).mode == OptMode::kSearch) {
          UOPD_RETURN_IF_ERROR(who.Require(kRightRun, "search (it runs kernels on the device)"));
        }
        UOPD_ASSIGN_OR_RETURN(auto ast, DecodeAst(ctx_.asts, request->ast(), ctx_.limits));
        UOPD_RETURN_IF_ERROR(CheckNotStopped(watch.flag(), "optimizing"));
        UOPD_ASSIGN_OR_RETURN(
            result, ctx_.programs.Compile(*device, std::move(ast), optimization, watch.flag()));
      } else if (request->has_source()) {
        UOPD_ASSIGN_OR_RETURN(result, CompileSource(who, *device, request->source(), watch.flag()));
      } else {
        return absl::InvalidArgumentError("the request has neither an ast nor a source");
      }
    }
    const CacheEntry& entry = *result.lookup.entry;
    if (entry.is_search_record()) {
      return absl::InternalError(absl::StrCat("cache entry ", result.key_hex, " holds no kernel"));
    }
    response->set_cache_key(result.key_hex);
    response->set_cache_tier(result.lookup.answered_by);
    response->set_target(result.key.target);
    for (const Opt& opt : result.applied) *response->add_applied_opts() = EncodeOpt(opt);
    *response->mutable_metadata() = EncodeProgramMetadata(entry.spec);
    response->set_entry(entry.kernel.entry);
    if (request->want_source()) response->set_source(entry.spec.src);
    if (request->want_binary()) {
      response->set_binary(entry.kernel.bytes);
      response->set_ptx(entry.kernel.ptx);
    }
    return absl::OkStatus();
  });
}

absl::Status KernelServiceImpl::DoCreateBuffer(const Identity& who,
                                               const v1::CreateBufferRequest& request,
                                               const std::string& session,
                                               v1::CreateBufferResponse* response) {
  // Before any memory is touched; AddBuffer checks again, as the session may end meanwhile.
  if (!session.empty()) UOPD_RETURN_IF_ERROR(ctx_.resources.CheckSession(who, session));
  UOPD_ASSIGN_OR_RETURN(Scalar dtype, BufferDtype(request.dtype()));
  UOPD_ASSIGN_OR_RETURN(int64_t bytes, BufferBytes(dtype, request.size()));
  if (!request.initial().empty() && static_cast<int64_t>(request.initial().size()) != bytes) {
    return absl::InvalidArgumentError(absl::StrCat("initial has ", request.initial().size(),
                                                   " bytes, size * itemsize is ", bytes));
  }
  UOPD_ASSIGN_OR_RETURN(Device * device, ctx_.devices.Get(DeviceOrDefault(request.device())));
  UOPD_ASSIGN_OR_RETURN(auto storage, ctx_.resources.Allocate(who, *device, bytes));
  UOPD_ASSIGN_OR_RETURN(BufferView view, BufferView::Whole(std::move(storage), dtype));
  if (!request.initial().empty()) {
    UOPD_RETURN_IF_ERROR(view.CopyIn(0, request.initial().data(), bytes));
  }
  UOPD_ASSIGN_OR_RETURN(std::string handle,
                        ctx_.resources.AddBuffer(who, std::move(view), session));
  response->set_handle(handle);
  response->set_bytes(bytes);
  return absl::OkStatus();
}

grpc::Status KernelServiceImpl::CreateBuffer(grpc::ServerContext* context,
                                             const v1::CreateBufferRequest* request,
                                             v1::CreateBufferResponse* response) {
  return ServeShared(v1::LocalCall::kCreateBuffer, *context, [&](const Identity& who) {
    return DoCreateBuffer(who, *request, SessionOf(*context), response);
  });
}

namespace {

absl::Status CopyChunkIn(const BufferView& view, const v1::WriteBufferChunk& chunk) {
  return view.CopyIn(chunk.offset(), chunk.data().data(),
                     static_cast<int64_t>(chunk.data().size()));
}

// [offset, offset + length) of `view` that `request` asks for, checked.
absl::StatusOr<std::pair<int64_t, int64_t>> ReadRangeOf(const BufferView& view,
                                                        const v1::ReadBufferRequest& request) {
  const int64_t total = static_cast<int64_t>(view.bytes());
  const int64_t offset = request.offset();
  // Length 0 reads to the end: the offset alone must be inside (the error then names the
  // length asked for, not the one it would have meant).
  UOPD_RETURN_IF_ERROR(CheckByteRange(offset, request.length(), total));
  const int64_t length = request.length() == 0 ? total - offset : request.length();
  return std::make_pair(offset, length);
}

absl::Status CopyOut(const BufferView& view, int64_t offset, int64_t size, std::string* out) {
  out->resize(size);
  return view.CopyOut(offset, out->data(), size);
}

}  // namespace

grpc::Status KernelServiceImpl::WriteBuffer(grpc::ServerContext* context,
                                            grpc::ServerReader<v1::WriteBufferChunk>* reader,
                                            v1::WriteBufferResponse* response) {
  return Serve("WriteBuffer", *context, kRightRun, [&](const Identity& who) -> absl::Status {
    v1::WriteBufferChunk chunk;
    std::optional<BufferView> view;
    std::string handle;
    int64_t written = 0;
    StreamProgress progress(ctx_.watchdog, context, ctx_.stream_idle_timeout);
    while (reader->Read(&chunk)) {
      progress.Moved();
      UOPD_RETURN_IF_ERROR(CheckAlive(*context));
      if (!view) {
        if (chunk.handle().empty())
          return absl::InvalidArgumentError("the first chunk must name a handle");
        UOPD_ASSIGN_OR_RETURN(view, ctx_.resources.GetBuffer(who, chunk.handle()));
        handle = chunk.handle();
      } else if (!chunk.handle().empty() && chunk.handle() != handle) {
        return absl::InvalidArgumentError("all chunks of one WriteBuffer call go to one handle");
      }
      UOPD_RETURN_IF_ERROR(CopyChunkIn(*view, chunk));
      written += static_cast<int64_t>(chunk.data().size());
    }
    if (context->IsCancelled()) return progress.Ended("chunk");
    if (!view) return absl::InvalidArgumentError("no chunks were sent");
    response->set_bytes_written(written);
    return absl::OkStatus();
  });
}

absl::Status KernelServiceImpl::DoWriteBufferSmall(const Identity& who,
                                                   const v1::WriteBufferChunk& request,
                                                   v1::WriteBufferResponse* response) {
  if (request.handle().empty()) return absl::InvalidArgumentError("handle is empty");
  if (static_cast<int64_t>(request.data().size()) > kMaxChunk) {
    return absl::ResourceExhaustedError(absl::StrCat("WriteBufferSmall carries at most ", kMaxChunk,
                                                     " bytes, not ", request.data().size(),
                                                     ": use the WriteBuffer stream"));
  }
  UOPD_ASSIGN_OR_RETURN(BufferView view, ctx_.resources.GetBuffer(who, request.handle()));
  UOPD_RETURN_IF_ERROR(CopyChunkIn(view, request));
  response->set_bytes_written(static_cast<int64_t>(request.data().size()));
  return absl::OkStatus();
}

grpc::Status KernelServiceImpl::WriteBufferSmall(grpc::ServerContext* context,
                                                 const v1::WriteBufferChunk* request,
                                                 v1::WriteBufferResponse* response) {
  return ServeShared(v1::LocalCall::kWriteBufferSmall, *context, [&](const Identity& who) {
    return DoWriteBufferSmall(who, *request, response);
  });
}

grpc::Status KernelServiceImpl::ReadBuffer(grpc::ServerContext* context,
                                           const v1::ReadBufferRequest* request,
                                           grpc::ServerWriter<v1::ReadBufferChunk>* writer) {
  return Serve("ReadBuffer", *context, kRightRun, [&](const Identity& who) -> absl::Status {
    UOPD_ASSIGN_OR_RETURN(BufferView view, ctx_.resources.GetBuffer(who, request->handle()));
    UOPD_ASSIGN_OR_RETURN(auto range, ReadRangeOf(view, *request));
    const auto [offset, length] = range;
    int64_t chunk_bytes = request->chunk_bytes() <= 0
                              ? kDefaultChunk
                              : std::min<int64_t>(request->chunk_bytes(), kMaxChunk);
    v1::ReadBufferChunk chunk;
    StreamProgress progress(ctx_.watchdog, context, ctx_.stream_idle_timeout);
    for (int64_t at = offset; at < offset + length || (length == 0 && at == offset);
         at += chunk_bytes) {
      UOPD_RETURN_IF_ERROR(CheckAlive(*context));
      int64_t size = std::min(chunk_bytes, offset + length - at);
      chunk.set_offset(at);
      UOPD_RETURN_IF_ERROR(CopyOut(view, at, size, chunk.mutable_data()));
      if (!writer->Write(chunk)) return progress.Ended("chunk taken by the client");
      progress.Moved();
      if (length == 0) break;
    }
    return absl::OkStatus();
  });
}

absl::Status KernelServiceImpl::DoReadBufferSmall(const Identity& who,
                                                  const v1::ReadBufferRequest& request,
                                                  v1::ReadBufferChunk* response) {
  UOPD_ASSIGN_OR_RETURN(BufferView view, ctx_.resources.GetBuffer(who, request.handle()));
  UOPD_ASSIGN_OR_RETURN(auto range, ReadRangeOf(view, request));
  if (range.second > kMaxChunk) {
    return absl::ResourceExhaustedError(absl::StrCat("ReadBufferSmall returns at most ", kMaxChunk,
                                                     " bytes, not ", range.second,
                                                     ": use the ReadBuffer stream"));
  }
  response->set_offset(range.first);
  return CopyOut(view, range.first, range.second, response->mutable_data());
}

grpc::Status KernelServiceImpl::ReadBufferSmall(grpc::ServerContext* context,
                                                const v1::ReadBufferRequest* request,
                                                v1::ReadBufferChunk* response) {
  return ServeShared(v1::LocalCall::kReadBufferSmall, *context, [&](const Identity& who) {
    return DoReadBufferSmall(who, *request, response);
  });
}

absl::Status KernelServiceImpl::DoFreeBuffer(const Identity& who,
                                             const v1::FreeBufferRequest& request,
                                             v1::FreeBufferResponse*) {
  return ctx_.resources.FreeBuffer(who, request.handle());
}

grpc::Status KernelServiceImpl::FreeBuffer(grpc::ServerContext* context,
                                           const v1::FreeBufferRequest* request,
                                           v1::FreeBufferResponse* response) {
  return ServeShared(v1::LocalCall::kFreeBuffer, *context,
                     [&](const Identity& who) { return DoFreeBuffer(who, *request, response); });
}

absl::Status KernelServiceImpl::DoExecute(const Identity& who, const v1::ExecuteRequest& request,
                                          const CallEnd& end, v1::ExecuteResponse* response) {
  RunWatchdog::Watch watch(ctx_.watchdog, end);
  ActForCaller(watch, ctx_.resources, who);
  UOPD_ASSIGN_OR_RETURN(
      LargeKernelReservation reserved,
      ReserveForLargeKernels(who, NodesOfLargeKernels(request.kernels(), ctx_.large_kernel_nodes),
                             watch.flag()));
  RequestContext rc{who, request.device(), ctx_.devices, ctx_.resources, ctx_.limits, ctx_.asts};
  UOPD_ASSIGN_OR_RETURN(BuiltBindings built,
                        BuildBindings(rc, request.buffers(), request.kernels()));
  UOPD_ASSIGN_OR_RETURN(auto plan,
                        ExecutionPlan::Build(std::move(built.buffers), std::move(built.kernels),
                                             ctx_.programs, ctx_.pool, watch.flag()));
  if (watch.flag()->stopped()) return absl::CancelledError("the call was cancelled");
  return Run(*plan, request.vars(), request.return_buffers(), watch, response->mutable_timings(),
             response->mutable_outputs());
}

grpc::Status KernelServiceImpl::Execute(grpc::ServerContext* context,
                                        const v1::ExecuteRequest* request,
                                        v1::ExecuteResponse* response) {
  return ServeShared(v1::LocalCall::kExecute, *context, [&](const Identity& who) {
    return DoExecute(who, *request, CallEndOf(*context), response);
  });
}

grpc::Status KernelServiceImpl::Prepare(grpc::ServerContext* context,
                                        const v1::PrepareRequest* request,
                                        v1::PrepareResponse* response) {
  return Serve("Prepare", *context, kRightRun, [&](const Identity& who) -> absl::Status {
    // Checked before compiling; AddPlan checks again, as the session may end meanwhile.
    const std::string session = SessionOf(*context);
    if (!session.empty()) UOPD_RETURN_IF_ERROR(ctx_.resources.CheckSession(who, session));
    RunWatchdog::Watch watch(ctx_.watchdog, *context);
    ActForCaller(watch, ctx_.resources, who);
    UOPD_ASSIGN_OR_RETURN(
        LargeKernelReservation reserved,
        ReserveForLargeKernels(
            who, NodesOfLargeKernels(request->kernels(), ctx_.large_kernel_nodes), watch.flag()));
    RequestContext rc{who, request->device(), ctx_.devices, ctx_.resources, ctx_.limits, ctx_.asts};
    UOPD_ASSIGN_OR_RETURN(BuiltBindings built,
                          BuildBindings(rc, request->buffers(), request->kernels()));
    UOPD_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionPlan> plan,
                          ExecutionPlan::Build(std::move(built.buffers), std::move(built.kernels),
                                               ctx_.programs, ctx_.pool, watch.flag()));
    for (const RuntimeVar& var : plan->RuntimeVars()) {
      v1::VarBounds* bounds = response->add_vars();
      bounds->set_name(var.name);
      bounds->set_min(var.min);
      bounds->set_max(var.max);
      if (var.multiple > 1) bounds->set_multiple_of(var.multiple);
    }
    for (const PreparedKernel& k : plan->kernels()) {
      v1::PreparedKernelInfo* info = response->add_kernels();
      info->set_name(k.program->spec->name);
      info->set_cache_key(k.program->key_hex);
      for (const Opt& opt : k.program->applied) *info->add_applied_opts() = EncodeOpt(opt);
      for (int dep : k.dependencies) info->add_dependencies(dep);
    }
    UOPD_ASSIGN_OR_RETURN(
        std::string id,
        ctx_.resources.AddPlan(who, std::move(plan), std::move(built.handles), session));
    response->set_plan_id(id);
    return absl::OkStatus();
  });
}

absl::Status KernelServiceImpl::DoRunPlan(const Identity& who, const v1::RunPlanRequest& request,
                                          const CallEnd& end, v1::RunPlanResponse* response) {
  UOPD_ASSIGN_OR_RETURN(auto plan, ctx_.resources.GetPlan(who, request.plan_id()));
  RunWatchdog::Watch watch(ctx_.watchdog, end);
  return Run(*plan, request.vars(), request.return_buffers(), watch, response->mutable_timings(),
             response->mutable_outputs());
}

grpc::Status KernelServiceImpl::RunPlan(grpc::ServerContext* context,
                                        const v1::RunPlanRequest* request,
                                        v1::RunPlanResponse* response) {
  return ServeShared(v1::LocalCall::kRunPlan, *context, [&](const Identity& who) {
    return DoRunPlan(who, *request, CallEndOf(*context), response);
  });
}

grpc::Status KernelServiceImpl::ReleasePlan(grpc::ServerContext* context,
                                            const v1::ReleasePlanRequest* request,
                                            v1::ReleasePlanResponse*) {
  return Serve("ReleasePlan", *context, kRightRun, [&](const Identity& who) {
    return ctx_.resources.ReleasePlan(who, request->plan_id());
  });
}

grpc::Status KernelServiceImpl::OpenLocalChannel(grpc::ServerContext* context,
                                                 const v1::OpenLocalChannelRequest*,
                                                 v1::OpenLocalChannelResponse* response) {
  return Serve("OpenLocalChannel", *context, kRightRun, [&](const Identity& who) -> absl::Status {
    if (ctx_.local_tickets == nullptr) {
      return absl::FailedPreconditionError(
          "this daemon has no local socket (start it with --local_socket, or listen on a unix "
          "socket): use gRPC");
    }
    UOPD_ASSIGN_OR_RETURN(std::string ticket, ctx_.local_tickets->Issue(who));
    response->set_path(ctx_.local_socket_path);
    response->set_ticket(std::move(ticket));
    response->set_ticket_seconds(
        static_cast<int32_t>(absl::ToInt64Seconds(ctx_.local_tickets->lifetime())));
    return absl::OkStatus();
  });
}

grpc::ServerWriteReactor<v1::OpenSessionResponse>* KernelServiceImpl::OpenSession(
    grpc::CallbackServerContext* context, const v1::OpenSessionRequest*) {
  // Recorded as the opening (its latency, and a refusal's code), not the session's lifetime,
  // and counted for a drain only while it opens: an open session is no call in flight.
  std::string session;
  const grpc::Status opened =
      Serve("OpenSession", *context, kRightRun, [&](const Identity& who) -> absl::Status {
        UOPD_ASSIGN_OR_RETURN(session, ctx_.resources.OpenSession(who));
        return absl::OkStatus();
      });
  return new SessionReactor(ctx_.resources, opened, std::move(session));
}

v1::LocalReply KernelServiceImpl::ServeLocal(const Identity& who, const v1::LocalCall& call,
                                             std::function<bool()> gone) {
  v1::LocalReply reply;
  CallEnd end{std::chrono::system_clock::time_point::max(), std::move(gone)};
  if (call.timeout_us() > 0) {
    end.deadline = std::chrono::system_clock::now() + std::chrono::microseconds(std::min<int64_t>(
                                                          call.timeout_us(), int64_t{1} << 50));
  }
  const SharedMethod* shared = SharedMethodOf(call.call_case());
  const char* method = shared != nullptr ? shared->name : "Unset";
  // Recorded as "Local.<method>", beside the same method over gRPC.
  RpcScope scope(ctx_.metrics, ctx_.drain, absl::StrCat("Local.", method));
  absl::Status status = [&]() -> absl::Status {
    if (!scope.admitted()) return absl::UnavailableError("the server is shutting down");
    if (call.timeout_us() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("timeout_us is ", call.timeout_us(), "; it must be 0 (none) or more"));
    }
    if (shared == nullptr) {
      return absl::InvalidArgumentError("the call names no method (LocalCall.call is unset)");
    }
    UOPD_RETURN_IF_ERROR(who.Require(shared->right, absl::StrCat("call ", method)));
    switch (call.call_case()) {
      case v1::LocalCall::kRunPlan:
        return DoRunPlan(who, call.run_plan(), end, reply.mutable_run_plan());
      case v1::LocalCall::kExecute:
        return DoExecute(who, call.execute(), end, reply.mutable_execute());
      case v1::LocalCall::kCreateBuffer:
        return DoCreateBuffer(who, call.create_buffer(), call.session(),
                              reply.mutable_create_buffer());
      case v1::LocalCall::kFreeBuffer:
        return DoFreeBuffer(who, call.free_buffer(), reply.mutable_free_buffer());
      case v1::LocalCall::kWriteBufferSmall:
        return DoWriteBufferSmall(who, call.write_buffer_small(),
                                  reply.mutable_write_buffer_small());
      case v1::LocalCall::kReadBufferSmall:
        return DoReadBufferSmall(who, call.read_buffer_small(), reply.mutable_read_buffer_small());
      case v1::LocalCall::CALL_NOT_SET:
        break;
    }
    return absl::InternalError(absl::StrCat("no body for ", method));
  }();
  // One rule with gRPC's: a run stopped at its timeout is DEADLINE_EXCEEDED; any other error
  // (a bad request, a bounds check) keeps its own status, however late it came.
  status = AtDeadline(std::move(status), end.deadline, std::chrono::system_clock::now(), method);
  scope.Done(ToGrpcStatus(status));
  if (!status.ok()) {
    reply.clear_reply();
    reply.set_code(static_cast<int32_t>(status.code()));
    reply.set_message(std::string(status.message()));
  }
  return reply;
}

v1::LocalReply KernelServiceImpl::ServeLocalFrame(const Identity& who, const std::string& frame,
                                                  std::function<bool()> gone) {
  auto refuse = [&](const absl::Status& status) {
    RpcScope scope(ctx_.metrics, ctx_.drain, "Local.Unparsed");
    if (scope.admitted()) scope.Done(ToGrpcStatus(status));
    v1::LocalReply reply;
    reply.set_code(static_cast<int32_t>(status.code()));
    reply.set_message(std::string(status.message()));
    return reply;
  };
  const int64_t bytes = static_cast<int64_t>(frame.size());
  const bool large = large_requests_.IsLarge(bytes);
  std::shared_ptr<const void> parse_charge;
  if (large) {
    if (absl::Status open = large_requests_.Admit(who.quota_key, bytes); !open.ok()) {
      return refuse(open);
    }
    absl::StatusOr<std::shared_ptr<const void>> charge =
        ctx_.resources.Charge(who, bytes * LargeRequestGate::kParsedBytesPerWireByte);
    if (!charge.ok()) {
      absl::Status refused(
          charge.status().code(),
          absl::StrCat("parsing a request of ", bytes, " bytes: ", charge.status().message()));
      large_requests_.Record(who.quota_key, bytes, refused);
      return refuse(refused);
    }
    parse_charge = *std::move(charge);
  }
  v1::LocalCall call;
  if (!call.ParseFromString(frame)) {
    return refuse(absl::InvalidArgumentError("a frame that is not one LocalCall"));
  }
  v1::LocalReply reply = ServeLocal(who, call, std::move(gone));
  if (large) {
    large_requests_.Record(
        who.quota_key, bytes,
        absl::Status(static_cast<absl::StatusCode>(reply.code()), reply.message()));
  }
  return reply;
}

}  // namespace uopd
