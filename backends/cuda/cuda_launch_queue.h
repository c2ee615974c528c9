// CudaLaunchQueue: a plan's kernels on a few streams of one GPU, ordered by events where a
// kernel waits for one on another stream, with one wait at the end of the run. A kernel that
// follows the last kernel of a stream goes to that stream (a chain needs no event); other
// kernels take the streams in turn, so independent kernels overlap.
#ifndef UOPD_BACKENDS_CUDA_CUDA_LAUNCH_QUEUE_H_
#define UOPD_BACKENDS_CUDA_CUDA_LAUNCH_QUEUE_H_

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_runtime.h"
#include "core/device/launch_queue.h"

namespace uopd {

class CudaLaunchQueue : public LaunchQueue {
 public:
  static absl::StatusOr<std::unique_ptr<CudaLaunchQueue>> Create(
      std::shared_ptr<CudaContext> context);
  ~CudaLaunchQueue() override;

  absl::Status Submit(int index, const Program& program, absl::Span<void* const> buffers,
                      absl::Span<const int64_t> vals, const LaunchDims& dims,
                      absl::Span<const int> after) override;
  absl::Status Finish(std::vector<KernelTime>* times, int* failed_index) override;

 private:
  static constexpr int kStreams = 4;
  // Status words come in chunks that never move: kernels in flight hold their addresses.
  static constexpr int kStatusChunk = 1024;

  explicit CudaLaunchQueue(std::shared_ptr<CudaContext> context) : context_(std::move(context)) {}
  // Events and status words for kernel `index`.
  absl::Status Reserve(int index);
  CUdeviceptr StatusWord(int index) const {
    return status_chunks_[index / kStatusChunk] + sizeof(int) * (index % kStatusChunk);
  }

  std::shared_ptr<CudaContext> context_;
  std::vector<CUstream> streams_;
  CUevent start_ = nullptr;
  std::vector<CUevent> done_;               // by kernel index: recorded on its stream after it
  std::vector<CUdeviceptr> status_chunks_;  // zero between runs

  // The run in progress.
  struct Submitted {
    int stream = 0;
    int previous_on_stream = -1;
    std::vector<int> after;
    std::string name;
  };
  std::vector<Submitted> run_;
  int last_on_stream_[kStreams] = {-1, -1, -1, -1};
  int next_stream_ = 0;
};

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_CUDA_LAUNCH_QUEUE_H_
