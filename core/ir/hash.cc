#include "core/ir/hash.h"

#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "core/ir/graph.h"

namespace uopd {
namespace {

// Bumped whenever the serialization below changes, so old and new hashes never collide.
constexpr uint64_t kHashVersion = 1;

void HashArg(const UOp& node, Sha256& sha) {
  const Arg& arg = node.arg();
  // The kernel name is metadata: it must not change the hash.
  ArgKind kind = node.op() == Op::kSink ? ArgKind::kNone : arg.kind;
  sha.UpdateU64(static_cast<uint64_t>(kind));
  switch (kind) {
    case ArgKind::kNone:
    case ArgKind::kInvalid:
      break;
    case ArgKind::kI64:
    case ArgKind::kU64:
      sha.UpdateU64(static_cast<uint64_t>(arg.i));
      break;
    case ArgKind::kF64: {
      uint64_t bits;
      std::memcpy(&bits, &arg.f, sizeof(bits));
      sha.UpdateU64(bits);
      break;
    }
    case ArgKind::kBool:
      sha.UpdateU64(arg.b);
      break;
    case ArgKind::kRange:
      sha.UpdateU64(static_cast<uint64_t>(arg.axis_type));
      sha.UpdateU64(arg.axis.size());
      for (int64_t axis : arg.axis) sha.UpdateU64(static_cast<uint64_t>(axis));
      break;
    case ArgKind::kVar:
      sha.UpdateFramed(arg.str);
      sha.UpdateU64(static_cast<uint64_t>(arg.var_min));
      sha.UpdateU64(static_cast<uint64_t>(arg.var_max));
      // Only where it says something, so the hashes of variables without one stay as they were.
      if (arg.var_multiple > 1) {
        sha.UpdateFramed("multiple_of");
        sha.UpdateU64(static_cast<uint64_t>(arg.var_multiple));
      }
      break;
    case ArgKind::kReduceOp:
      sha.UpdateU64(static_cast<uint64_t>(arg.reduce_op));
      break;
    case ArgKind::kKernel:
    case ArgKind::kStr:
      sha.UpdateFramed(arg.str);
      break;
  }
  if (node.op() == Op::kSink) return;
  sha.UpdateU64(arg.ints.size());
  for (int64_t v : arg.ints) sha.UpdateU64(static_cast<uint64_t>(v));
}

}  // namespace

Digest AstHash(const UOp* root) {
  absl::flat_hash_map<const UOp*, Digest> hashes;
  for (const UOp* node : Toposort(root)) {
    Sha256 sha;
    sha.UpdateU64(kHashVersion);
    sha.UpdateU64(static_cast<uint64_t>(node->op()));
    const DType& dtype = node->dtype();
    sha.UpdateU64(static_cast<uint64_t>(dtype.scalar));
    sha.UpdateU64(static_cast<uint64_t>(dtype.count));
    sha.UpdateU64(dtype.ptr);
    sha.UpdateU64(static_cast<uint64_t>(dtype.size));
    sha.UpdateU64(static_cast<uint64_t>(dtype.addrspace));
    HashArg(*node, sha);
    sha.UpdateU64(node->num_src());
    for (const UOp* src : node->src()) {
      const Digest& child = hashes.at(src);
      sha.Update(child.data(), child.size());
    }
    hashes.emplace(node, sha.Finish());
  }
  return hashes.at(root);
}

std::string AstHashHex(const UOp* root) { return DigestToHex(AstHash(root)); }

}  // namespace uopd
