// NvrtcCompiler: CUDA C to PTX and CUBIN for one explicit architecture, with NVRTC in process.
// Needs no GPU: a CPU-only server compiles for any sm_XX it is asked for.
#ifndef UOPD_BACKENDS_CUDA_NVRTC_COMPILER_H_
#define UOPD_BACKENDS_CUDA_NVRTC_COMPILER_H_

#include <string>

#include "core/device/compiler.h"

namespace uopd {

// Safe for concurrent use: every compile has its own NVRTC program.
class NvrtcCompiler : public Compiler {
 public:
  // `arch` is "sm_XX" (e.g. "sm_90"); validated by Create. `include_dir` holds the toolkit's
  // headers (cuda_fp16.h, ...); empty means the one found when uopd was built.
  static absl::StatusOr<std::unique_ptr<NvrtcCompiler>> Create(const std::string& arch,
                                                               std::string include_dir = "");

  // bytes = CUBIN for the architecture, ptx = its PTX (the driver can JIT it on newer GPUs),
  // resources = what ptxas reports the kernel uses there.
  std::string Target() const override { return arch_; }
  // The toolkit headers NVRTC reads (cuda_fp16.h, ...), found when uopd was built.
  static std::string DefaultIncludeDir();
  std::string Identity() const override;

 private:
  absl::StatusOr<CompiledKernel> CompileImpl(const ProgramSpec& spec,
                                             const CompileOptions& options) const override;
  NvrtcCompiler(std::string arch, std::string include_dir)
      : arch_(std::move(arch)), include_dir_(std::move(include_dir)) {}
  std::string arch_;
  std::string include_dir_;
};

// "NVRTC 13.0", or the error when NVRTC cannot be queried.
std::string NvrtcVersion();

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_NVRTC_COMPILER_H_
