// IrLimits: bounds on what a client's graph may ask of the server. Configured from main.
#ifndef UOPD_CORE_IR_LIMITS_H_
#define UOPD_CORE_IR_LIMITS_H_

#include <cstdint>

namespace uopd {

struct IrLimits {
  // Nodes on the wire (before duplicates merge). Real kernels have tens to a few thousand.
  int64_t max_nodes = 200'000;
  // Longest source chain from a leaf to the root.
  int64_t max_depth = 20'000;
  // Largest buffer (DEFINE_GLOBAL pointer size) in elements.
  int64_t max_buffer_elements = int64_t{1} << 34;
};

}  // namespace uopd

#endif  // UOPD_CORE_IR_LIMITS_H_
