// The AST hash (IR.md "Identity"): a SHA-256 Merkle hash over (op, dtype, arg, source hashes).
//
// Computed on the hash-consed graph, so it does not depend on wire order or duplicate nodes. The
// SINK's kernel info (only a name) is left out: renaming a kernel does not change its identity.
#ifndef UOPD_CORE_IR_HASH_H_
#define UOPD_CORE_IR_HASH_H_

#include <string>

#include "core/ir/uop.h"
#include "core/util/sha256.h"

namespace uopd {

Digest AstHash(const UOp* root);
// The hash as 64 lowercase hex digits.
std::string AstHashHex(const UOp* root);

}  // namespace uopd

#endif  // UOPD_CORE_IR_HASH_H_
