#include "backends/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/ptxas_report.h"

namespace uopd {
namespace {

constexpr int kCodegenVersion = 7;

// Owns an nvrtcProgram.
class NvrtcProgram {
 public:
  NvrtcProgram() = default;
  ~NvrtcProgram() {
    if (program_ != nullptr) nvrtcDestroyProgram(&program_);
  }
  nvrtcProgram* out() { return &program_; }
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

std::string Log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  log.resize(size - 1);
  return log;
}

// Compiles `src` for `arch` ("compute_90" for PTX, "sm_90" for CUBIN) and returns the output;
// with `ptxas_log`, ptxas reports what the kernel uses there (`-v`).
absl::StatusOr<std::string> RunNvrtc(const std::string& src, const std::string& name,
                                     const std::string& arch, const std::string& include_dir,
                                     bool cubin, std::string* ptxas_log = nullptr) {
  NvrtcProgram program;
  std::string file = name + ".cu";
  nvrtcResult result =
      nvrtcCreateProgram(program.out(), src.c_str(), file.c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("nvrtcCreateProgram: ", nvrtcGetErrorString(result)));
  }
  std::string arch_flag = "--gpu-architecture=" + arch;
  // No fast math, and no contraction of a multiply and an add into one FMA (NVRTC's default):
  // the IR rounds each (docs/IR.md), as the CPU backend does.
  std::string include_flag = "--include-path=" + include_dir;
  std::vector<const char*> options = {arch_flag.c_str(), include_flag.c_str(), "--std=c++17",
                                      "-default-device", "-lineinfo",          "--fmad=false"};
  if (ptxas_log != nullptr) options.push_back("--ptxas-options=-v");
  result = nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
  if (result != NVRTC_SUCCESS) {
    // The source is ours: a rejection is a uopd bug. The log says where.
    return absl::InternalError(absl::StrCat("kernel ", name, ": NVRTC (", arch,
                                            ") rejected the generated CUDA C: ",
                                            nvrtcGetErrorString(result), "\n", Log(program.get())));
  }
  if (ptxas_log != nullptr) *ptxas_log = Log(program.get());
  size_t size = 0;
  std::string out;
  if (cubin) {
    if (nvrtcGetCUBINSize(program.get(), &size) != NVRTC_SUCCESS)
      return absl::InternalError("nvrtcGetCUBINSize");
    out.resize(size);
    if (nvrtcGetCUBIN(program.get(), out.data()) != NVRTC_SUCCESS)
      return absl::InternalError("nvrtcGetCUBIN");
  } else {
    if (nvrtcGetPTXSize(program.get(), &size) != NVRTC_SUCCESS)
      return absl::InternalError("nvrtcGetPTXSize");
    out.resize(size);
    if (nvrtcGetPTX(program.get(), out.data()) != NVRTC_SUCCESS)
      return absl::InternalError("nvrtcGetPTX");
    if (!out.empty() && out.back() == '\0') out.pop_back();
  }
  return out;
}

}  // namespace

std::string NvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "NVRTC ?";
  return absl::StrCat("NVRTC ", major, ".", minor);
}

absl::StatusOr<std::unique_ptr<NvrtcCompiler>> NvrtcCompiler::Create(const std::string& arch,
                                                                     std::string include_dir) {
  if (include_dir.empty()) include_dir = DefaultIncludeDir();
  int number = 0;
  if (!absl::StartsWith(arch, "sm_") || !absl::SimpleAtoi(arch.substr(3), &number) || number < 50 ||
      number > 200) {
    return absl::InvalidArgumentError(
        absl::StrCat("target '", arch, "' is not an sm_XX architecture"));
  }
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    std::vector<int> archs(count);
    nvrtcGetSupportedArchs(archs.data());
    if (std::find(archs.begin(), archs.end(), number) == archs.end()) {
      return absl::InvalidArgumentError(absl::StrCat(NvrtcVersion(), " cannot compile for ", arch));
    }
  }
  return std::unique_ptr<NvrtcCompiler>(new NvrtcCompiler(arch, std::move(include_dir)));
}

std::string NvrtcCompiler::DefaultIncludeDir() { return UOPD_CUDA_INCLUDE_DIR; }

std::string NvrtcCompiler::Identity() const {
  return absl::StrCat(NvrtcVersion(), ";uopd-cuda-codegen-", kCodegenVersion, ";std=c++17");
}

absl::StatusOr<CompiledKernel> NvrtcCompiler::CompileImpl(const ProgramSpec& spec,
                                                          const CompileOptions&) const {
  const std::string compute = "compute_" + arch_.substr(3);
  auto ptx = RunNvrtc(spec.src, spec.name, compute, include_dir_, /*cubin=*/false);
  if (!ptx.ok()) return ptx.status();
  std::string ptxas_log;
  auto cubin = RunNvrtc(spec.src, spec.name, arch_, include_dir_, /*cubin=*/true, &ptxas_log);
  if (!cubin.ok()) return cubin.status();
  CompiledKernel kernel;
  kernel.bytes = *std::move(cubin);
  kernel.ptx = *std::move(ptx);
  kernel.entry = spec.name;
  if (auto report = ParsePtxasReport(ptxas_log, spec.name); report.ok()) {
    kernel.resources = *report;
  }
  return kernel;
}

}  // namespace uopd
