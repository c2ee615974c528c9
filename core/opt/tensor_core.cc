#include "core/opt/tensor_core.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace uopd {

int TensorCore::ReduceAxes() const {
  int n = 0;
  for (int k = dims[2]; k > 1; k /= 2) ++n;
  return n;
}

std::string TensorCore::Name() const {
  return absl::StrCat("WMMA_", dims[0], "_", dims[1], "_", dims[2], "_", ScalarShortName(dtype_in),
                      "_", ScalarShortName(dtype_out));
}

std::vector<std::string> TensorCore::BaseShape() const {
  std::vector<std::string> out;
  int locals = 0, upcasts = 0;
  for (const std::string& step : opts) {
    out.push_back(absl::StrCat(step.substr(0, 1), step[0] == 'l' ? locals++ : upcasts++));
  }
  for (int i = 0; i < ReduceAxes(); ++i) out.push_back(absl::StrCat("r", i));
  return out;
}

std::array<std::vector<int>, 2> TensorCore::OperandPermutations() const {
  const std::vector<std::string> shape = BaseShape();
  // The factors in swizzle order: the warp bits, the upcasts, then K's unrolls (each kind
  // numbered in the shape's order already).
  std::vector<std::string> forward;
  for (char kind : {'l', 'u', 'r'}) {
    for (const std::string& name : shape) {
      if (name[0] == kind) forward.push_back(name);
    }
  }
  std::array<std::vector<int>, 2> out;
  for (int operand = 0; operand < 2; ++operand) {
    std::vector<std::string> remapped;
    for (const auto& part : swizzle[operand])
      remapped.insert(remapped.end(), part.begin(), part.end());
    // p[i]: where the factor that shape[i] is remapped to sits in the shape.
    std::vector<int> p(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
      const size_t at = std::find(forward.begin(), forward.end(), shape[i]) - forward.begin();
      const std::string& to = at < remapped.size() ? remapped[at] : shape[i];
      p[i] = static_cast<int>(std::find(shape.begin(), shape.end(), to) - shape.begin());
    }
    // argsort of a permutation is its inverse.
    out[operand].assign(shape.size(), 0);
    for (size_t i = 0; i < shape.size(); ++i) out[operand][p[i]] = static_cast<int>(i);
  }
  return out;
}

std::vector<std::string> TensorCore::FragmentFactors() const {
  std::vector<std::string> out;
  for (int i = 0; i < ReduceAxes(); ++i) out.push_back(absl::StrCat("r", i));
  int upcasts = 0;
  for (const std::string& step : opts) upcasts += step[0] == 'u';
  for (int i = 0; i < upcasts; ++i) out.push_back(absl::StrCat("u", i));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<TensorCore> CudaTensorCores(const std::string& arch) {
  int version = 0;
  absl::string_view digits = arch;
  if (!absl::ConsumePrefix(&digits, "sm_") || !absl::SimpleAtoi(digits, &version)) return {};
  // Shared by every NVIDIA shape with M = 16 and N = 8.
  const std::vector<std::string> opts = {"u0", "l0", "l0", "l1", "l1", "l1", "u1"};
  using Swizzle = std::array<std::array<std::vector<std::string>, 3>, 2>;
  const Swizzle k16 = {
      {{{{"r1", "r2", "l2", "l3", "l4"}, {"u1", "r3"}, {"l0", "l1", "u0", "r0"}}},
       {{{"r1", "r2", "u0", "l0", "l1"}, {"r0", "r3"}, {"l2", "l3", "l4", "u1"}}}}};
  const Swizzle k32 = {
      {{{{"r2", "r3", "l2", "l3", "l4"}, {"u1", "r4"}, {"l0", "l1", "u0", "r0", "r1"}}},
       {{{"r2", "r3", "u0", "l0", "l1"}, {"r1", "r4"}, {"l2", "l3", "l4", "u1", "r0"}}}}};
  const Swizzle k8_f16 = {{{{{"r1", "r2", "l2", "l3", "l4"}, {"r0", "u1"}, {"l0", "l1", "u0"}}},
                           {{{"r1", "r2", "u0", "l0", "l1"}, {"u1", "r0"}, {"l2", "l3", "l4"}}}}};
  const Swizzle k8_tf32 = {{{{{"r0", "r1", "l2", "l3", "l4"}, {"u1", "r2"}, {"l0", "l1", "u0"}}},
                            {{{"r0", "r1", "u0", "l0", "l1"}, {"u1", "r2"}, {"l2", "l3", "l4"}}}}};
  std::vector<TensorCore> m16n8k16, m16n8k8_f16, m16n8k8_tf32, m16n8k32_f8;
  for (auto [in, out] : {std::pair{Scalar::kFloat16, Scalar::kFloat32},
                         {Scalar::kBfloat16, Scalar::kFloat32},
                         {Scalar::kFloat16, Scalar::kFloat16}}) {
    m16n8k16.push_back({{8, 16, 16}, 32, {8, 4, 4}, in, out, opts, k16});
  }
  for (auto [in, out] :
       {std::pair{Scalar::kFloat16, Scalar::kFloat32}, {Scalar::kFloat16, Scalar::kFloat16}}) {
    m16n8k8_f16.push_back({{8, 16, 8}, 32, {4, 2, 4}, in, out, opts, k8_f16});
  }
  m16n8k8_tf32.push_back(
      {{8, 16, 8}, 32, {4, 2, 4}, Scalar::kFloat32, Scalar::kFloat32, opts, k8_tf32});
  for (Scalar in : {Scalar::kFp8E4M3, Scalar::kFp8E5M2}) {
    m16n8k32_f8.push_back({{8, 16, 32}, 32, {16, 8, 4}, in, Scalar::kFloat32, opts, k32});
  }
  std::vector<TensorCore> out;
  auto add = [&](const std::vector<TensorCore>& tcs) {
    out.insert(out.end(), tcs.begin(), tcs.end());
  };
  if (version >= 80) {
    add(m16n8k16);
    add(m16n8k8_f16);
    add(m16n8k8_tf32);
    if (version >= 89) add(m16n8k32_f8);
  } else if (version >= 75) {
    add(m16n8k8_f16);
  }
  return out;
}

}  // namespace uopd
