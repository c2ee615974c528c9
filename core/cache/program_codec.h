// Converting ProgramSpec and CompiledKernel to and from their wire form (program.proto), for the
// compiled-byte cache and the Compile RPC.
#ifndef UOPD_CORE_CACHE_PROGRAM_CODEC_H_
#define UOPD_CORE_CACHE_PROGRAM_CODEC_H_

#include "absl/status/statusor.h"
#include "core/device/compiler.h"
#include "core/device/program_spec.h"
#include "uopd/v1/program.pb.h"

namespace uopd {

v1::ProgramMetadata EncodeProgramMetadata(const ProgramSpec& spec);
v1::CachedKernel EncodeCachedKernel(const ProgramSpec& spec, const CompiledKernel& kernel);

struct DecodedKernel {
  ProgramSpec spec;  // src and ast are left empty: the caller attaches the AST it has
  CompiledKernel kernel;
};
// INTERNAL when the entry is malformed (a cache entry we did not write).
absl::StatusOr<DecodedKernel> DecodeCachedKernel(const v1::CachedKernel& cached);

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_PROGRAM_CODEC_H_
