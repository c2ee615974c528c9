// FlattenReshapes: a kernel without RESHAPE that computes the same. Each RESHAPE'd buffer is
// the buffer itself, and each INDEX of one takes the row-major flat index
// i0*stride0 + i1*stride1 + ... (tinygrad's meaning). Run once after decoding, so nothing past
// the decoder ever sees a RESHAPE or a multi-dimensional INDEX.
#ifndef UOPD_CORE_IR_FLATTEN_RESHAPES_H_
#define UOPD_CORE_IR_FLATTEN_RESHAPES_H_

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace uopd {

// The shape an INDEX of the buffer pointer `buf` indexes: its RESHAPE's (through AFTERs), or
// nullptr for a flat buffer.
const std::vector<int64_t>* ReshapedShape(const UOp* buf);

// The new root, built in `graph`; `root` itself when the kernel has no RESHAPE.
const UOp* FlattenReshapes(Graph& graph, const UOp* root);

}  // namespace uopd

#endif  // UOPD_CORE_IR_FLATTEN_RESHAPES_H_
