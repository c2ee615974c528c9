#include "core/codegen/grid_vector_access.h"

namespace uopd {

bool GridKeepsVector(const LinearProgram& program, const Instr& instr) {
  // A tensor core's fragments are registers of their own (kBuild arrays).
  if (instr.kind == InstrKind::kWmma || instr.kind == InstrKind::kBuild) return true;
  if (instr.kind != InstrKind::kLoad && instr.kind != InstrKind::kStore) return false;
  const DType& d = AccessedType(program, instr);
  if (d.count < 2 || d.scalar == Scalar::kBool) return false;
  const int64_t bytes = int64_t{d.count} * ScalarItemSize(d.scalar);
  if ((bytes & (bytes - 1)) != 0) return false;
  if (IsMaskedAccess(instr)) {
    // Lanes with masks of their own (a padded edge) are written out: one guard per access.
    const int mask = instr.src[instr.kind == InstrKind::kLoad ? 1 : 2];
    if (program.instrs[mask].dtype.count > 1) return false;
  }
  return true;
}

}  // namespace uopd
