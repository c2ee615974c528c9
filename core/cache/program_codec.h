// Converting programs and cache entries to and from their wire form (program.proto): the bytes
// of the cache's tiers and of the Compile RPC. The only place core/cache meets protobuf.
#ifndef UOPD_CORE_CACHE_PROGRAM_CODEC_H_
#define UOPD_CORE_CACHE_PROGRAM_CODEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cache/cache_entry.h"
#include "core/device/program_spec.h"
#include "uopd/v1/program.pb.h"

namespace uopd {

// The launch dimensions, slots and variables of `spec` as the Compile RPC reports them.
v1::ProgramMetadata EncodeProgramMetadata(const ProgramSpec& spec);
// A program from its metadata (src and ast left empty). INTERNAL when it is malformed.
absl::StatusOr<ProgramSpec> DecodeProgramMetadata(const v1::ProgramMetadata& metadata);
// Whether two programs agree in everything EncodeProgramMetadata says of them.
bool SameProgramMetadata(const ProgramSpec& a, const ProgramSpec& b);

// A cache entry's bytes in the tiers and on the wire, and back. Parsing checks what the entry
// says (INTERNAL for bytes that are not an entry, or one whose program is malformed: an entry
// we did not write), not whom it belongs to: KernelCache checks its key.
std::string SerializeCacheEntry(const CacheEntry& entry);
absl::StatusOr<CacheEntry> ParseCacheEntry(absl::string_view bytes);

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_PROGRAM_CODEC_H_
