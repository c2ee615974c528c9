#include "backends/cpu/llvm_compiler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/cpu/llvm_status.h"
#include "backends/cpu/support_bitcode.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace uopd {
namespace {

// Bump when the renderer or the support library changes what a kernel compiles to.
constexpr int kCodegenVersion = 5;

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(const HostTarget& t) {
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(t.triple, error);
  if (target == nullptr)
    return absl::InternalError(absl::StrCat("llvm target ", t.triple, ": ", error));
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(t.triple, t.cpu, t.features, options, llvm::Reloc::PIC_,
                                  std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (tm == nullptr) return absl::InternalError("cannot create an LLVM target machine");
  return tm;
}

// Whether the IR calls into the support library (every kernel declares it; few use it).
bool CallsSupport(const std::string& ir) {
  for (size_t at = ir.find("@uopd_"); at != std::string::npos; at = ir.find("@uopd_", at + 1)) {
    size_t line = ir.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    if (ir.compare(line, 8, "declare ") != 0) return true;
  }
  return false;
}

// Links the support library into `module`, keeping only what the kernel calls, as internal
// functions the optimizer inlines.
absl::Status LinkSupport(llvm::Module& module) {
  auto buffer = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char*>(kSupportBitcode), kSupportBitcodeSize),
      "uopd_support", /*RequiresNullTerminator=*/false);
  auto support = llvm::parseBitcodeFile(buffer->getMemBufferRef(), module.getContext());
  if (!support) return FromLlvmError(support.takeError(), "support library");
  for (llvm::Function& fn : **support) {
    // Built for a generic CPU: take the kernel's target instead, so everything inlines.
    fn.removeFnAttr("target-cpu");
    fn.removeFnAttr("target-features");
    fn.removeFnAttr("tune-cpu");
  }
  (*support)->setTargetTriple(module.getTargetTriple());
  (*support)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*support), llvm::Linker::LinkOnlyNeeded)) {
    return absl::InternalError("linking the support library failed");
  }
  for (llvm::Function& fn : module) {
    if (!fn.isDeclaration() && fn.getName().starts_with("uopd_")) {
      fn.setLinkage(llvm::GlobalValue::InternalLinkage);
    }
  }
  return absl::OkStatus();
}

// Collects errors instead of letting LLVM's default handler call exit(1), which it does for an
// error in inline or module asm found while emitting the object; and the size of a stack frame
// over the "warn-stack-size" limit, which LLVM reports as a warning.
class CollectErrors : public llvm::DiagnosticHandler {
 public:
  CollectErrors(std::string* errors, uint64_t* frame_over_limit)
      : errors_(errors), frame_over_limit_(frame_over_limit) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (const auto* frame = llvm::dyn_cast<llvm::DiagnosticInfoStackSize>(&info)) {
      *frame_over_limit_ = std::max(*frame_over_limit_, frame->getStackSize());
      return true;
    }
    if (info.getSeverity() != llvm::DS_Error) return true;
    llvm::raw_string_ostream stream(*errors_);
    llvm::DiagnosticPrinterRawOStream printer(stream);
    info.print(printer);
    stream << "\n";
    return true;
  }

 private:
  std::string* errors_;
  uint64_t* frame_over_limit_;
};

void Optimize(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&tm, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);
}

}  // namespace

LlvmCompiler::LlvmCompiler(HostTarget target) : target_(std::move(target)) { InitializeLlvmOnce(); }

std::string LlvmCompiler::Identity() const {
  return absl::StrCat("llvm-", LLVM_VERSION_STRING, ";uopd-cpu-codegen-", kCodegenVersion,
                      ";O3;pic");
}

absl::StatusOr<CompiledKernel> LlvmCompiler::CompileImpl(const ProgramSpec& spec,
                                                         const CompileOptions&) const {
  return CompileIr(spec.src, spec.name);
}

absl::StatusOr<CompiledKernel> LlvmCompiler::CompileIr(const std::string& ir,
                                                       const std::string& entry) const {
  llvm::LLVMContext context;
  std::string diagnostics;
  uint64_t frame_over_limit = 0;
  context.setDiagnosticHandler(std::make_unique<CollectErrors>(&diagnostics, &frame_over_limit));
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(ir, diagnostic, context);
  if (module == nullptr) {
    std::string message;
    llvm::raw_string_ostream stream(message);
    diagnostic.print(entry.c_str(), stream);
    return absl::InternalError(
        absl::StrCat("kernel ", entry, ": generated LLVM IR does not parse: ", stream.str()));
  }
  auto tm = MakeTargetMachine(target_);
  if (!tm.ok()) return tm.status();
  module->setModuleIdentifier(entry);
  module->setSourceFileName(entry);
  module->setTargetTriple(target_.triple);
  module->setDataLayout((*tm)->createDataLayout());
  if (CallsSupport(ir)) {
    if (absl::Status linked = LinkSupport(*module); !linked.ok()) return linked;
  }
  std::string errors;
  llvm::raw_string_ostream error_stream(errors);
  if (llvm::verifyModule(*module, &error_stream)) {
    return absl::InternalError(
        absl::StrCat("kernel ", entry, ": generated LLVM IR is invalid: ", error_stream.str()));
  }
  const std::string frame_limit = absl::StrCat(kMaxKernelFrameBytes);
  for (llvm::Function& fn : *module) {
    if (!fn.isDeclaration()) fn.addFnAttr("warn-stack-size", frame_limit);
  }
  Optimize(*module, **tm);

  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream object_stream(object);
  llvm::legacy::PassManager codegen;
  if ((*tm)->addPassesToEmitFile(codegen, object_stream, nullptr,
                                 llvm::CodeGenFileType::ObjectFile)) {
    return absl::InternalError("the LLVM target cannot emit object files");
  }
  codegen.run(*module);
  if (frame_over_limit > 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("kernel ", entry, " needs a stack frame of ", frame_over_limit,
                     " bytes; a kernel may use at most ", kMaxKernelFrameBytes,
                     " (it runs on the stacks of the daemon's threads): split it, or upcast less"));
  }
  if (!diagnostics.empty()) {
    return absl::InternalError(
        absl::StrCat("kernel ", entry, ": LLVM could not emit the object: ", diagnostics));
  }
  return CompiledKernel{std::string(object.begin(), object.end()), entry};
}

}  // namespace uopd
