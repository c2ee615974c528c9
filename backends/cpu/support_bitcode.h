// The support library (core/util/kernel_support.c) as LLVM bitcode, compiled with clang-19 at build
// time and embedded here by embed_bitcode.cmake.
#ifndef UOPD_BACKENDS_CPU_SUPPORT_BITCODE_H_
#define UOPD_BACKENDS_CPU_SUPPORT_BITCODE_H_

#include <cstddef>

namespace uopd {

extern const unsigned char kSupportBitcode[];
extern const size_t kSupportBitcodeSize;

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_SUPPORT_BITCODE_H_
