#include "core/ir/evaluate.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/ir/printer.h"

namespace uopd {

absl::StatusOr<Int128> EvaluateInt(const UOp* root,
                                   const absl::flat_hash_map<const UOp*, Int128>& leaves) {
  absl::flat_hash_map<const UOp*, Int128> values;
  std::vector<std::pair<const UOp*, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [node, expanded] = stack.back();
    stack.pop_back();
    if (values.contains(node)) continue;
    if (auto leaf = leaves.find(node); leaf != leaves.end()) {
      values.emplace(node, leaf->second);
      continue;
    }
    if (!expanded) {
      stack.push_back({node, true});
      for (const UOp* src : node->src()) stack.push_back({src, false});
      continue;
    }
    auto fail = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot evaluate ", DescribeNode(*node), ": ", why));
    };
    auto v = [&](size_t i) { return values.at(node->src(i)); };
    Int128 r = 0;
    switch (node->op()) {
      case Op::kConst:
        if (node->IsInvalid()) return fail("Invalid index");
        r = ConstIntValue(*node);
        break;
      case Op::kDefineVar:
      case Op::kRange:
        return fail("no value given");
      case Op::kAdd:
        r = v(0) + v(1);
        break;
      case Op::kSub:
        r = v(0) - v(1);
        break;
      case Op::kMul:
        r = v(0) * v(1);
        break;
      case Op::kNeg:
        r = -v(0);
        break;
      case Op::kMulacc:
        r = v(0) * v(1) + v(2);
        break;
      case Op::kIdiv:
      case Op::kMod:
        if (v(1) == 0) return fail("division by zero");
        r = node->op() == Op::kIdiv ? v(0) / v(1) : v(0) % v(1);
        break;
      case Op::kMax:
        r = std::max(v(0), v(1));
        break;
      case Op::kAnd:
        r = v(0) & v(1);
        break;
      case Op::kOr:
        r = v(0) | v(1);
        break;
      case Op::kXor:
        r = v(0) ^ v(1);
        break;
      case Op::kShl:
        r = v(0) << static_cast<int>(v(1) & 63);
        break;
      case Op::kShr:
        r = v(0) >> static_cast<int>(v(1) & 63);
        break;
      case Op::kCmplt:
        r = v(0) < v(1);
        break;
      case Op::kCmpne:
        r = v(0) != v(1);
        break;
      case Op::kCmpeq:
        r = v(0) == v(1);
        break;
      case Op::kWhere:
        r = v(0) ? v(1) : v(2);
        break;
      case Op::kCast:
        if (!IsIntLike(node->src(0)->dtype().scalar)) return fail("not integer arithmetic");
        r = v(0);
        break;
      default:
        return fail("not integer arithmetic");
    }
    if (node->dtype().ptr || !IsIntLike(node->dtype().scalar)) return fail("not an integer");
    values.emplace(node, WrapToDType(r, node->dtype().scalar));
  }
  return values.at(root);
}

}  // namespace uopd
