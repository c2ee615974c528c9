// The vectorized range: of the ranges the optimizer typed UPCAST or UNROLL, the one code
// generation turns into vector lanes (the others are written out by ExpandRanges). A good one
// is the contiguous axis of the kernel's memory accesses, so that its loads and stores are
// single vector loads and stores: a matmul's output columns, a row sum's reduce axis.
#ifndef UOPD_CORE_CODEGEN_VECTOR_RANGE_H_
#define UOPD_CORE_CODEGEN_VECTOR_RANGE_H_

#include <cstdint>

#include "core/ir/affine.h"
#include "core/ir/kernel_ast.h"

namespace uopd {

// How many times an access with this index runs, roughly: the product of the sizes of the
// ranges it uses (a symbolic size counts as 1024).
double Trips(const UOp* index);

// The UPCAST or UNROLL range of constant power-of-two size in [2, max_lanes] along which most
// memory accesses are contiguous (stores count double); null when none is.
const UOp* ChooseVectorRange(const KernelAst& ast, int64_t max_lanes);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_VECTOR_RANGE_H_
