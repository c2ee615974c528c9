#include "backends/cuda/cuda_device.h"

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_driver.h"
#include "backends/cuda/cuda_renderer.h"
#include "backends/cuda/cuda_runtime.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "core/util/log.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::StatusOr<CompilerPair> CreateCudaCompilerPair(const std::string& arch,
                                                    const CompilerWrapper& wrap_compiler) {
  UOPD_ASSIGN_OR_RETURN(std::unique_ptr<Compiler> compiler, NvrtcCompiler::Create(arch));
  if (wrap_compiler) compiler = wrap_compiler("CUDA", std::move(compiler));
  return CompilerPair{std::make_unique<CudaRenderer>(), std::move(compiler)};
}

absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateCudaDevices(
    const CompilerWrapper& wrap_compiler) {
  UOPD_ASSIGN_OR_RETURN(const CudaDriver* driver, CudaDriver::Load());
  int count = 0;
  UOPD_RETURN_IF_ERROR(driver->Check(driver->DeviceGetCount(&count), "cuDeviceGetCount",
                                     absl::StatusCode::kFailedPrecondition));
  if (count == 0) return absl::FailedPreconditionError("the CUDA driver sees no GPU");
  std::vector<std::unique_ptr<Device>> devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    UOPD_ASSIGN_OR_RETURN(auto context, CudaContext::Create(*driver, ordinal));
    auto pair = CreateCudaCompilerPair(context->arch(), wrap_compiler);
    if (!pair.ok()) {
      // NVRTC does not know this GPU yet: compile for the newest architecture it knows (sm_90)
      // and let the driver JIT that PTX.
      Log(LogLevel::kWarning, "NVRTC cannot target this GPU; using PTX for sm_90",
          {{"gpu", context->arch()}, {"error", pair.status().ToString()}});
      UOPD_ASSIGN_OR_RETURN(pair, CreateCudaCompilerPair("sm_90", wrap_compiler));
    }
    std::vector<CompilerPair> compilers;
    compilers.push_back(*std::move(pair));
    Log(LogLevel::kInfo, "GPU found",
        {{"device", absl::StrCat("CUDA:", ordinal)},
         {"name", context->name()},
         {"arch", context->arch()}});
    devices.push_back(std::make_unique<Device>(
        DeviceSpec("CUDA", ordinal), std::make_unique<CudaAllocator>(context), std::move(compilers),
        std::make_unique<CudaRuntime>(context), 1, context->total_memory(), context->name()));
  }
  return devices;
}

}  // namespace uopd
