// Test fakes for what lies under the program layers, the plan and the services, so those are
// tested in process without LLVM, a GPU or a daemon:
// - FakeAllocator: host memory with a capacity (RESOURCE_EXHAUSTED past it), counting bytes.
// - FakeRenderer: the real codegen pipeline (core/codegen/pipeline.h) for the CPU's loops,
//   spelling the linear program's listing as the "source".
// - FakeCompiler: the source's bytes, as an object; counts compiles; can be made to fail.
// - FakeRuntime: runs a loaded kernel with the reference interpreter on the kernel's own AST
//   (tests/testing/reference_interpreter.h); counts loads and runs; can be made to get some
//   programs' outputs wrong.
// - FakeTier: an in-memory cache tier that counts and can be made to fail (an unreachable
//   store).
// FakeDevice() puts the first four together as a device named like a real one.
#ifndef UOPD_TESTS_TESTING_FAKE_DEVICE_H_
#define UOPD_TESTS_TESTING_FAKE_DEVICE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "core/cache/cache_tier.h"
#include "core/codegen/pipeline.h"
#include "core/device/device.h"

namespace uopd::testing {

struct FakeCounters {
  std::atomic<int> compiles{0};
  std::atomic<int> loads{0};
  std::atomic<int> runs{0};
  std::atomic<bool> fail_compiles{false};  // compiles fail with INTERNAL (a backend's bug)
  // Programs whose spec this accepts get the first element of each output wrong (a bit of its
  // most significant byte flipped): a backend that miscompiles some lowerings. Set before the
  // device is used.
  std::function<bool(const ProgramSpec&)> miscomputes;
};

class FakeAllocator : public Allocator {
 public:
  explicit FakeAllocator(int64_t capacity = int64_t{1} << 30) : capacity_(capacity) {}
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* ptr, size_t bytes) override;
  absl::Status CopyIn(void* dst, const void* host_src, size_t bytes) override;
  absl::Status CopyOut(void* host_dst, const void* src, size_t bytes) override;
  int64_t bytes_in_use() const override { return in_use_.load(); }

 private:
  const int64_t capacity_;
  std::atomic<int64_t> in_use_{0};
};

class FakeRenderer : public SpellingRenderer {
 public:
  FakeRenderer() : SpellingRenderer(CodegenTarget::CpuLoops()) {}
  std::string Identity() const override { return "fake-listing/v1"; }
  std::string Spell(const LoweredKernel& kernel) const override { return kernel.program.Dump(); }
};

class FakeCompiler : public Compiler {
 public:
  explicit FakeCompiler(std::shared_ptr<FakeCounters> counters) : counters_(std::move(counters)) {}
  std::string Target() const override { return "fake-target"; }
  std::string Identity() const override { return "fake-compiler/v1"; }

 private:
  absl::StatusOr<CompiledKernel> CompileImpl(const ProgramSpec& spec,
                                             const CompileOptions& options) const override;
  std::shared_ptr<FakeCounters> counters_;
};

class FakeRuntime : public RuntimeFactory {
 public:
  explicit FakeRuntime(std::shared_ptr<FakeCounters> counters) : counters_(std::move(counters)) {}
  absl::StatusOr<std::shared_ptr<Program>> Load(const CompiledKernel& kernel,
                                                const ProgramSpec& spec) override;

 private:
  std::shared_ptr<FakeCounters> counters_;
};

// A device of fakes called `name` ("CPU" stands in for the CPU device in service tests).
std::unique_ptr<Device> FakeDevice(std::shared_ptr<FakeCounters> counters,
                                   const std::string& name = "CPU",
                                   int64_t memory_capacity = int64_t{1} << 30);

class FakeTier : public CacheTier {
 public:
  const char* name() const override { return "fake"; }
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  absl::Status Put(const std::string& key, const std::string& value) override;
  absl::Status Erase(const std::string& key) override;

  std::atomic<bool> unavailable{false};  // every call fails (UNAVAILABLE), as a lost store
  std::atomic<int> gets{0}, puts{0}, erases{0};
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_FAKE_DEVICE_H_
