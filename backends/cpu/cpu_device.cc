#include "backends/cpu/cpu_device.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_allocator.h"
#include "backends/cpu/host_target.h"
#include "backends/cpu/llvm_compiler.h"
#include "backends/cpu/orc_runtime.h"

namespace uopd {

absl::StatusOr<std::unique_ptr<Device>> CreateCpuDevice(ThreadPool* pool,
                                                        const CpuDeviceOptions& options) {
  auto runtime = OrcRuntime::Create(pool);
  if (!runtime.ok()) return runtime.status();
  std::vector<CompilerPair> compilers;
  std::unique_ptr<Compiler> compiler = std::make_unique<LlvmCompiler>();
  if (options.wrap_compiler) compiler = options.wrap_compiler("CPU", std::move(compiler));
  const HostTarget& host = GetHostTarget();
  LlvmRendererOptions renderer = options.renderer;
  // Measured on x86 only (llvm_renderer.h): other architectures keep LLVM's choice.
  if (absl::StartsWith(host.triple, "x86_64") && !absl::StrContains(host.features, "+avx512f")) {
    renderer.max_widened_accumulators = 16;  // ymm0-15
    renderer.max_masked_vector_bits = 256;
  }
  compilers.push_back({std::make_unique<LlvmRenderer>(renderer), std::move(compiler)});
  int threads = pool == nullptr ? 1 : pool->size() + 1;
  const int64_t memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  const std::string arch = host.triple.substr(0, host.triple.find('-'));
  return std::make_unique<Device>(DeviceSpec("CPU", 0), std::make_unique<CpuAllocator>(),
                                  std::move(compilers), std::move(*runtime), threads,
                                  memory > 0 ? memory : 0, absl::StrCat(arch, " ", host.cpu));
}

}  // namespace uopd
