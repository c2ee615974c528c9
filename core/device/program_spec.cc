#include "core/device/program_spec.h"

#include "absl/strings/str_cat.h"
#include "core/ir/evaluate.h"
#include "core/util/status_macros.h"

namespace uopd {

absl::Status ProgramSpec::CheckVars(
    const absl::flat_hash_map<std::string, int64_t>& var_vals) const {
  for (const VarInfo& var : vars) {
    auto it = var_vals.find(var.name);
    if (it == var_vals.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", name, ": no value for variable '", var.name, "'"));
    }
    if (it->second < var.min || it->second > var.max) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", name, ": variable '", var.name,
                                                     "' = ", it->second, " is outside [", var.min,
                                                     ", ", var.max, "]"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LaunchDims> ProgramSpec::launch_dims(
    const absl::flat_hash_map<std::string, int64_t>& var_vals) const {
  UOPD_RETURN_IF_ERROR(CheckVars(var_vals));
  auto eval = [&](const SymbolicDim& dim, int axis, const char* which) -> absl::StatusOr<int64_t> {
    Int128 value = dim.constant;
    if (dim.expr != nullptr) {
      absl::flat_hash_map<const UOp*, Int128> leaves;
      for (const UOp* node : Toposort(dim.expr)) {
        if (node->op() != Op::kDefineVar) continue;
        auto it = var_vals.find(node->arg().str);
        if (it == var_vals.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("kernel ", name, ": no value for variable '", node->arg().str, "'"));
        }
        leaves[node] = it->second;
      }
      UOPD_ASSIGN_OR_RETURN(value, EvaluateInt(dim.expr, leaves));
    }
    if (value < 0 || value > (Int128{1} << 31) - 1) {
      return absl::OutOfRangeError(absl::StrCat("kernel ", name, ": ", which, " size ", axis, " = ",
                                                static_cast<int64_t>(value),
                                                " is outside [0, 2^31-1]"));
    }
    return static_cast<int64_t>(value);
  };
  LaunchDims dims;
  for (int axis = 0; axis < 3; ++axis) {
    UOPD_ASSIGN_OR_RETURN(dims.global[axis], eval(global_size[axis], axis, "global"));
    if (local_size) {
      UOPD_ASSIGN_OR_RETURN(dims.local[axis], eval((*local_size)[axis], axis, "local"));
    }
  }
  return dims;
}

}  // namespace uopd
