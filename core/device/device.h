// Device and DeviceRegistry: one Device per backend instance (CPU, CUDA:0, ...), each owning an
// allocator, (renderer, compiler) pairs and a runtime; the registry hands them out by name.
#ifndef UOPD_CORE_DEVICE_DEVICE_H_
#define UOPD_CORE_DEVICE_DEVICE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device/allocator.h"
#include "core/device/compiler.h"
#include "core/device/device_spec.h"
#include "core/device/renderer.h"
#include "core/device/runtime.h"

namespace uopd {

struct CompilerPair {
  std::unique_ptr<Renderer> renderer;
  std::unique_ptr<Compiler> compiler;
};

// Immutable after construction (its parts synchronize themselves): safe for concurrent use.
class Device {
 public:
  // REQUIRES: at least one compiler pair; the first is the default.
  Device(DeviceSpec spec, std::unique_ptr<Allocator> allocator, std::vector<CompilerPair> compilers,
         std::unique_ptr<RuntimeFactory> runtime, int threads = 1, int64_t memory_bytes = 0,
         std::string description = "");

  const DeviceSpec& spec() const { return spec_; }
  std::string name() const { return spec_.name(); }
  Allocator& allocator() const { return *allocator_; }
  const Renderer& renderer() const { return *compilers_.front().renderer; }
  const Compiler& compiler() const { return *compilers_.front().compiler; }
  const std::vector<CompilerPair>& compilers() const { return compilers_; }
  RuntimeFactory& runtime() const { return *runtime_; }
  // Worker threads kernels of this device may use at once.
  int threads() const { return threads_; }
  // Total memory of the device (host RAM for the CPU), 0 when unknown.
  int64_t memory_bytes() const { return memory_bytes_; }
  // The hardware, for people: "NVIDIA H200", "x86_64 znver5". May be empty.
  const std::string& description() const { return description_; }

 private:
  DeviceSpec spec_;
  std::unique_ptr<Allocator> allocator_;
  std::vector<CompilerPair> compilers_;
  std::unique_ptr<RuntimeFactory> runtime_;
  int threads_;
  int64_t memory_bytes_;
  std::string description_;
};

// The devices present on this machine. Filled at start-up from main (never from static
// initializers), read-only afterwards: safe for concurrent reads.
class DeviceRegistry {
 public:
  void Add(std::unique_ptr<Device> device);
  // By name ("CPU", "cuda:0"); FAILED_PRECONDITION when the device is not present
  // on this machine, INVALID_ARGUMENT when the name is malformed.
  absl::StatusOr<Device*> Get(absl::string_view name) const;
  std::vector<Device*> devices() const;

 private:
  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_DEVICE_H_
