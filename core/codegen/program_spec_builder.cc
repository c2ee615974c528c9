#include "core/codegen/program_spec_builder.h"

#include "absl/strings/ascii.h"

namespace uopd {

ProgramSpec SpecFromLinearProgram(const LinearProgram& program, std::string device,
                                  std::shared_ptr<const KernelAst> ast) {
  ProgramSpec spec;
  spec.name = program.name;
  spec.device = std::move(device);
  spec.ast = std::move(ast);
  spec.vars = program.vars;
  spec.var_names = program.var_names;
  spec.globals = program.globals;
  spec.outs = program.outs;
  spec.ins = program.ins;
  spec.buf_count = program.buf_count;
  spec.proven_accesses = program.proven_accesses;
  spec.guarded_accesses = program.guarded_accesses;
  return spec;
}

std::string SanitizeKernelName(const std::string& name) {
  std::string out;
  for (char c : name) out.push_back(absl::ascii_isalnum(c) || c == '_' ? c : '_');
  if (out.empty()) return "kernel";
  if (absl::ascii_isdigit(out[0])) out = "k_" + out;
  if (out.size() > 200) out.resize(200);
  return out;
}

}  // namespace uopd
