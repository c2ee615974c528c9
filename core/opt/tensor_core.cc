#include "core/opt/tensor_core.h"

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

std::vector<TensorCore> CudaTensorCores(const std::string& arch) {
  int version = 0;
  absl::string_view digits = arch;
  if (!absl::ConsumePrefix(&digits, "sm_") || !absl::SimpleAtoi(digits, &version)) return {};
  // Shared by every NVIDIA shape with M = 16 and N = 8.
  const std::vector<std::string> opts = {"u0", "l0", "l0", "l1", "l1", "l1", "u1"};
  std::vector<TensorCore> m16n8k16, m16n8k8_f16, m16n8k8_tf32, m16n8k32_f8;
  for (auto [in, out] : {std::pair{Scalar::kFloat16, Scalar::kFloat32},
                         {Scalar::kBfloat16, Scalar::kFloat32},
                         {Scalar::kFloat16, Scalar::kFloat16}}) {
    m16n8k16.push_back({{8, 16, 16}, 32, {8, 4, 4}, in, out, opts});
  }
  for (auto [in, out] :
       {std::pair{Scalar::kFloat16, Scalar::kFloat32}, {Scalar::kFloat16, Scalar::kFloat16}}) {
    m16n8k8_f16.push_back({{8, 16, 8}, 32, {4, 2, 4}, in, out, opts});
  }
  m16n8k8_tf32.push_back({{8, 16, 8}, 32, {4, 2, 4}, Scalar::kFloat32, Scalar::kFloat32, opts});
  for (Scalar in : {Scalar::kFp8E4M3, Scalar::kFp8E5M2}) {
    m16n8k32_f8.push_back({{8, 16, 32}, 32, {16, 8, 4}, in, Scalar::kFloat32, opts});
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
