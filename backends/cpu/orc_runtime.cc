#include "backends/cpu/orc_runtime.h"

#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/host_target.h"
#include "backends/cpu/llvm_renderer.h"
#include "backends/cpu/llvm_status.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/MemoryBuffer.h"

namespace uopd {
namespace {

using KernelFn = int32_t (*)(void* const* buffers, const int64_t* vals,
                             const std::atomic<int32_t>* stop);

const StopFlag kNeverStop;

class CpuProgram : public Program {
 public:
  CpuProgram(llvm::orc::LLJIT& jit, llvm::orc::JITDylib& dylib, KernelFn fn, std::string name,
             ThreadPool* pool)
      : jit_(jit), dylib_(dylib), fn_(fn), name_(std::move(name)), pool_(pool) {}

  ~CpuProgram() override {
    // Nothing can call fn_ any more: release the code. A failure only leaks the JITDylib.
    llvm::consumeError(jit_.getExecutionSession().removeJITDylib(dylib_));
  }

  absl::Status Execute(absl::Span<void* const> buffers, absl::Span<const int64_t> vals,
                       const LaunchDims& dims, const StopFlag* stop) const override {
    if (vals.size() < 2) return absl::InvalidArgumentError("missing core_id/core_count values");
    int64_t threads = dims.global[0];
    if (threads <= 0) return absl::OkStatus();  // an empty parallel loop: nothing to run
    int max_threads = pool_ == nullptr ? 1 : pool_->size() + 1;
    if (threads > max_threads) threads = max_threads;
    std::vector<int32_t> results(threads, 0);
    auto run = [&](int core) {
      std::vector<int64_t> local(vals.begin(), vals.end());
      local[local.size() - 2] = core;
      local[local.size() - 1] = threads;
      results[core] =
          fn_(buffers.data(), local.data(), (stop != nullptr ? stop : &kNeverStop)->word());
    };
    if (threads == 1) {
      run(0);
    } else {
      pool_->ParallelFor(static_cast<int>(threads), run);
    }
    for (int32_t rc : results) {
      if (rc == kCpuKernelStopped) {
        return absl::CancelledError(absl::StrCat("kernel ", name_, " was stopped while running"));
      }
    }
    for (int32_t rc : results) {
      if (rc != 0) {
        return absl::OutOfRangeError(absl::StrCat("kernel ", name_,
                                                  ": run-time bounds check failed on buffer slot ",
                                                  rc - 1, "; the kernel was stopped"));
      }
    }
    return absl::OkStatus();
  }

 private:
  llvm::orc::LLJIT& jit_;
  llvm::orc::JITDylib& dylib_;
  KernelFn fn_;
  std::string name_;
  ThreadPool* pool_;
};

}  // namespace

OrcRuntime::OrcRuntime(std::unique_ptr<llvm::orc::LLJIT> jit, ThreadPool* pool)
    : jit_(std::move(jit)), pool_(pool) {}

OrcRuntime::~OrcRuntime() = default;

absl::StatusOr<std::unique_ptr<OrcRuntime>> OrcRuntime::Create(ThreadPool* pool) {
  InitializeLlvmOnce();
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) return FromLlvmError(jit.takeError(), "creating the ORC JIT");
  return std::unique_ptr<OrcRuntime>(new OrcRuntime(std::move(*jit), pool));
}

absl::StatusOr<std::shared_ptr<Program>> OrcRuntime::Load(const CompiledKernel& kernel,
                                                          const ProgramSpec& spec) {
  std::string dylib_name = absl::StrCat("uopd.", kernel.entry, ".", next_dylib_.fetch_add(1));
  auto dylib = jit_->createJITDylib(dylib_name);
  if (!dylib) return FromLlvmError(dylib.takeError(), "creating a JITDylib");
  auto object = llvm::MemoryBuffer::getMemBufferCopy(kernel.bytes, dylib_name);
  auto fail = [&](llvm::Error error, absl::string_view what) {
    llvm::consumeError(jit_->getExecutionSession().removeJITDylib(*dylib));
    return FromLlvmError(std::move(error), absl::StrCat("kernel ", spec.name, ": ", what));
  };
  if (llvm::Error error = jit_->addObjectFile(*dylib, std::move(object))) {
    return fail(std::move(error), "loading the object");
  }
  auto address = jit_->lookup(*dylib, kernel.entry);
  if (!address) return fail(address.takeError(), "resolving the entry symbol");
  return std::make_shared<CpuProgram>(*jit_, *dylib, address->toPtr<KernelFn>(), spec.name, pool_);
}

}  // namespace uopd
