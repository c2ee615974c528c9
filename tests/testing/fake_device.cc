#include "tests/testing/fake_device.h"

#include <cstring>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/reference_interpreter.h"

namespace uopd::testing {

absl::StatusOr<void*> FakeAllocator::Allocate(size_t bytes) {
  if (in_use_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes) > capacity_) {
    in_use_.fetch_sub(static_cast<int64_t>(bytes));
    return absl::ResourceExhaustedError(absl::StrCat("fake device: no room for ", bytes, " bytes"));
  }
  return static_cast<void*>(new char[bytes == 0 ? 1 : bytes]());
}

void FakeAllocator::Free(void* ptr, size_t bytes) {
  delete[] static_cast<char*>(ptr);
  in_use_.fetch_sub(static_cast<int64_t>(bytes));
}

absl::Status FakeAllocator::CopyIn(void* dst, const void* host_src, size_t bytes) {
  std::memcpy(dst, host_src, bytes);
  return absl::OkStatus();
}

absl::Status FakeAllocator::CopyOut(void* host_dst, const void* src, size_t bytes) {
  std::memcpy(host_dst, src, bytes);
  return absl::OkStatus();
}

absl::StatusOr<CompiledKernel> FakeCompiler::CompileImpl(const ProgramSpec& spec,
                                                         const CompileOptions& options) const {
  if (options.stop != nullptr && options.stop->stopped()) {
    return absl::CancelledError("fake compile: stopped");
  }
  counters_->compiles.fetch_add(1);
  if (counters_->fail_compiles.load()) {
    return absl::InternalError(absl::StrCat("fake compile of ", spec.name, " failed"));
  }
  return CompiledKernel{.bytes = "fake-object:" + spec.src, .entry = spec.name};
}

namespace {

// Runs its kernel's AST with the reference interpreter on the buffers it is given.
class FakeProgram : public Program {
 public:
  FakeProgram(std::shared_ptr<const KernelAst> ast, ProgramSpec spec,
              std::shared_ptr<FakeCounters> counters)
      : ast_(std::move(ast)), spec_(std::move(spec)), counters_(std::move(counters)) {}

  absl::Status Execute(absl::Span<void* const> buffers, absl::Span<const int64_t> vals,
                       const LaunchDims&, const StopFlag* stop) const override {
    if (stop != nullptr && stop->stopped()) return absl::CancelledError("fake run: stopped");
    counters_->runs.fetch_add(1);
    std::vector<std::string> bytes(spec_.buf_count);
    for (const BufferParam& param : spec_.globals) {
      bytes[param.slot].assign(static_cast<const char*>(buffers[param.slot]),
                               param.size * ScalarItemSize(param.dtype.scalar));
    }
    absl::flat_hash_map<std::string, int64_t> vars;
    // The client's variables lead the values, in spec.vars' order (runtime ones follow).
    for (size_t i = 0; i < spec_.vars.size() && i < vals.size(); ++i) {
      vars[spec_.vars[i].name] = vals[i];
    }
    if (absl::Status run = Interpret(*ast_, bytes, vars); !run.ok()) return run;
    if (counters_->miscomputes && counters_->miscomputes(spec_)) {
      for (const BufferParam& param : spec_.globals) {
        // The first element's most significant byte: far from it in every dtype.
        const int item = ScalarItemSize(param.dtype.scalar);
        const bool out = absl::c_linear_search(spec_.outs, param.slot);
        if (out && param.size > 0 && item > 0) bytes[param.slot][item - 1] ^= 0x40;
      }
    }
    for (int slot : spec_.outs) {
      std::memcpy(buffers[slot], bytes[slot].data(), bytes[slot].size());
    }
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<const KernelAst> ast_;
  ProgramSpec spec_;
  std::shared_ptr<FakeCounters> counters_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<Program>> FakeRuntime::Load(const CompiledKernel& kernel,
                                                           const ProgramSpec& spec) {
  if (kernel.bytes.rfind("fake-object:", 0) != 0) {
    return absl::InvalidArgumentError("fake runtime: not a fake object");
  }
  if (spec.ast == nullptr) return absl::FailedPreconditionError("fake runtime: no AST to run");
  counters_->loads.fetch_add(1);
  return std::make_shared<FakeProgram>(spec.ast, spec, counters_);
}

std::unique_ptr<Device> FakeDevice(std::shared_ptr<FakeCounters> counters, const std::string& name,
                                   int64_t memory_capacity) {
  std::vector<CompilerPair> compilers;
  compilers.push_back({std::make_unique<FakeRenderer>(), std::make_unique<FakeCompiler>(counters)});
  auto spec = DeviceSpec::Parse(name);
  return std::make_unique<Device>(spec.ok() ? *spec : DeviceSpec("CPU", 0),
                                  std::make_unique<FakeAllocator>(memory_capacity),
                                  std::move(compilers), std::make_unique<FakeRuntime>(counters),
                                  /*threads=*/1, memory_capacity, "fake device");
}

absl::StatusOr<std::optional<std::string>> FakeTier::Get(const std::string& key) {
  gets.fetch_add(1);
  if (unavailable.load()) return absl::UnavailableError("fake tier: unavailable");
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    counters_.misses.fetch_add(1);
    return std::nullopt;
  }
  counters_.hits.fetch_add(1);
  return it->second;
}

absl::Status FakeTier::Put(const std::string& key, const std::string& value) {
  puts.fetch_add(1);
  if (unavailable.load()) return absl::UnavailableError("fake tier: unavailable");
  absl::MutexLock lock(&mu_);
  entries_[key] = value;
  counters_.puts.fetch_add(1);
  return absl::OkStatus();
}

absl::Status FakeTier::Erase(const std::string& key) {
  erases.fetch_add(1);
  if (unavailable.load()) return absl::UnavailableError("fake tier: unavailable");
  absl::MutexLock lock(&mu_);
  entries_.erase(key);
  return absl::OkStatus();
}

size_t FakeTier::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace uopd::testing
