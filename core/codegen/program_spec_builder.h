// Filling a ProgramSpec's signature (buffers, variables, access counts) from a LinearProgram:
// the part every renderer shares.
#ifndef UOPD_CORE_CODEGEN_PROGRAM_SPEC_BUILDER_H_
#define UOPD_CORE_CODEGEN_PROGRAM_SPEC_BUILDER_H_

#include <memory>
#include <string>

#include "core/codegen/linear_program.h"
#include "core/device/program_spec.h"

namespace uopd {

// A ProgramSpec with everything but `src`, `global_size` and `local_size` filled in.
ProgramSpec SpecFromLinearProgram(const LinearProgram& program, std::string device,
                                  std::shared_ptr<const KernelAst> ast);

// `name` made a C identifier: characters outside [A-Za-z0-9_] become '_', a leading digit gets a
// prefix, and an empty name becomes "kernel".
std::string SanitizeKernelName(const std::string& name);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_PROGRAM_SPEC_BUILDER_H_
