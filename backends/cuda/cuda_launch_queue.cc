#include "backends/cuda/cuda_launch_queue.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<std::unique_ptr<CudaLaunchQueue>> CudaLaunchQueue::Create(
    std::shared_ptr<CudaContext> context) {
  std::unique_ptr<CudaLaunchQueue> queue(new CudaLaunchQueue(std::move(context)));
  const CudaDriver& d = queue->context_->driver();
  UOPD_RETURN_IF_ERROR(queue->context_->MakeCurrent());
  for (int i = 0; i < kStreams; ++i) {
    CUstream stream = nullptr;
    UOPD_RETURN_IF_ERROR(
        d.Check(d.StreamCreate(&stream, CU_STREAM_NON_BLOCKING), "creating a plan stream"));
    queue->streams_.push_back(stream);
  }
  UOPD_RETURN_IF_ERROR(
      d.Check(d.EventCreate(&queue->start_, CU_EVENT_DEFAULT), "creating an event"));
  return queue;
}

CudaLaunchQueue::~CudaLaunchQueue() {
  if (!context_->MakeCurrent().ok()) return;
  const CudaDriver& d = context_->driver();
  for (CUstream stream : streams_) d.StreamSynchronize(stream);
  for (CUevent event : done_) d.EventDestroy(event);
  if (start_ != nullptr) d.EventDestroy(start_);
  for (CUstream stream : streams_) d.StreamDestroy(stream);
  for (CUdeviceptr chunk : status_chunks_) d.MemFree(chunk);
}

absl::Status CudaLaunchQueue::Reserve(int index) {
  const CudaDriver& d = context_->driver();
  while (static_cast<int>(done_.size()) <= index) {
    CUevent event = nullptr;
    UOPD_RETURN_IF_ERROR(d.Check(d.EventCreate(&event, CU_EVENT_DEFAULT), "creating an event"));
    done_.push_back(event);
  }
  while (static_cast<int>(status_chunks_.size()) * kStatusChunk <= index) {
    CUdeviceptr chunk = 0;
    const size_t bytes = sizeof(int) * kStatusChunk;
    UOPD_RETURN_IF_ERROR(d.Check(d.MemAlloc(&chunk, bytes), "allocating status words"));
    absl::Status zeroed = d.Check(d.MemsetD8Async(chunk, 0, bytes, streams_[0]), "zeroing");
    if (zeroed.ok()) zeroed = d.Wait(streams_[0], "zeroing status words");
    if (!zeroed.ok()) {
      d.MemFree(chunk);
      return zeroed;
    }
    status_chunks_.push_back(chunk);
  }
  return absl::OkStatus();
}

absl::Status CudaLaunchQueue::Submit(int index, const Program& program,
                                     absl::Span<void* const> buffers,
                                     absl::Span<const int64_t> vals, const LaunchDims& dims,
                                     absl::Span<const int> after) {
  const auto* kernel = dynamic_cast<const CudaProgram*>(&program);
  if (kernel == nullptr || &kernel->context() != context_.get()) {
    return absl::InvalidArgumentError("a kernel loaded for another device was queued on a GPU");
  }
  if (index != static_cast<int>(run_.size())) {
    return absl::InternalError(absl::StrCat("kernel ", index, " queued out of order"));
  }
  for (int dep : after) {
    if (dep < 0 || dep >= index) {
      return absl::InternalError(absl::StrCat("kernel ", index, " follows kernel ", dep));
    }
  }
  const CudaDriver& d = context_->driver();
  UOPD_RETURN_IF_ERROR(context_->MakeCurrent());
  UOPD_RETURN_IF_ERROR(Reserve(index));
  if (index == 0) {
    UOPD_RETURN_IF_ERROR(d.Check(d.EventRecord(start_, streams_[0]), "recording an event"));
  }
  // Continue a stream whose last kernel this one follows; otherwise take the next stream.
  int stream = -1;
  for (int dep : after) {
    if (last_on_stream_[run_[dep].stream] == dep) {
      stream = run_[dep].stream;
      break;
    }
  }
  if (stream < 0) {
    stream = next_stream_;
    next_stream_ = (next_stream_ + 1) % kStreams;
  }
  for (int dep : after) {
    if (run_[dep].stream != stream) {
      UOPD_RETURN_IF_ERROR(
          d.Check(d.StreamWaitEvent(streams_[stream], done_[dep], 0), "joining streams"));
    }
  }
  UOPD_RETURN_IF_ERROR(kernel->Launch(streams_[stream], StatusWord(index), buffers, vals, dims));
  UOPD_RETURN_IF_ERROR(
      d.Check(d.EventRecord(done_[index], streams_[stream]), "recording an event"));
  run_.push_back({stream, last_on_stream_[stream], {after.begin(), after.end()}, kernel->name()});
  last_on_stream_[stream] = index;
  return absl::OkStatus();
}

absl::Status CudaLaunchQueue::Finish(std::vector<KernelTime>* times, int* failed_index) {
  *failed_index = -1;
  times->clear();
  const int n = static_cast<int>(run_.size());
  std::vector<Submitted> run = std::move(run_);
  run_.clear();
  std::fill(std::begin(last_on_stream_), std::end(last_on_stream_), -1);
  next_stream_ = 0;
  if (n == 0) return absl::OkStatus();
  const CudaDriver& d = context_->driver();
  UOPD_RETURN_IF_ERROR(context_->MakeCurrent());
  absl::Status status;
  for (CUstream stream : streams_) status.Update(d.Wait(stream, "running the plan"));
  UOPD_RETURN_IF_ERROR(status);

  // One copy per chunk of status words; the first failure by index is the one reported.
  std::vector<int> codes(status_chunks_.size() * kStatusChunk, 0);
  for (int c = 0; c * kStatusChunk < n; ++c) {
    const int count = std::min(kStatusChunk, n - c * kStatusChunk);
    UOPD_RETURN_IF_ERROR(
        d.Check(d.MemcpyDtoHAsync(codes.data() + c * kStatusChunk, status_chunks_[c],
                                  sizeof(int) * count, streams_[0]),
                "reading status words"));
  }
  UOPD_RETURN_IF_ERROR(d.Wait(streams_[0], "reading status words"));
  for (int i = 0; i < n; ++i) {
    if (codes[i] == 0) continue;
    if (*failed_index < 0) {
      *failed_index = i;
      status = BoundsCheckFailed(run[i].name, codes[i]);
    }
    UOPD_RETURN_IF_ERROR(d.Check(d.MemsetD8Async(StatusWord(i), 0, sizeof(int), streams_[0]),
                                 "clearing a status word"));
  }
  if (*failed_index >= 0) {
    UOPD_RETURN_IF_ERROR(d.Wait(streams_[0], "clearing status words"));
    return status;
  }

  // Ends come from the device; a kernel starts when its stream and its dependencies let it.
  times->resize(n);
  for (int i = 0; i < n; ++i) {
    float ms = 0;
    if (d.EventElapsedTime(&ms, start_, done_[i]) == CUDA_SUCCESS) {
      (*times)[i].end_ns = std::max<int64_t>(0, static_cast<int64_t>(ms * 1e6));
    }
    int64_t start = run[i].previous_on_stream >= 0 ? (*times)[run[i].previous_on_stream].end_ns : 0;
    for (int dep : run[i].after) start = std::max(start, (*times)[dep].end_ns);
    (*times)[i].start_ns = std::min(start, (*times)[i].end_ns);
  }
  return absl::OkStatus();
}

}  // namespace uopd
