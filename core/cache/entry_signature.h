// Signatures of cache entries that cross machines (CacheService.Put, a shared tier) or rest in a
// folder others might write (the disk tier): an entry is code every worker that finds it will
// run, so whoever can write to a shared store or the folder must not be able to choose it.
// Entries are signed with the cluster's key (or, on disk without one, the daemon's own secret)
// and checked before they are stored or used; an unsigned or badly signed entry is refused.
#ifndef UOPD_CORE_CACHE_ENTRY_SIGNATURE_H_
#define UOPD_CORE_CACHE_ENTRY_SIGNATURE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopd {

// HMAC-SHA256 under `cluster_key` of the 64-bit little-endian length of `key_hex`, `key_hex`,
// then `value` (the length keeps key and value from trading bytes).
std::string SignEntry(absl::string_view cluster_key, absl::string_view key_hex,
                      absl::string_view value);
bool EntrySignatureValid(absl::string_view cluster_key, absl::string_view key_hex,
                         absl::string_view value, absl::string_view signature);

// The cluster key in `path`: at least 32 bytes (trailing whitespace ignored), and a file only
// its owner can read. INVALID_ARGUMENT otherwise, naming why.
absl::StatusOr<std::string> ReadClusterKey(const std::string& path);

// A secret in `path` (`what` names it in errors): a file only its owner can read, trailing
// whitespace ignored, not empty.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path, absl::string_view what);

// The secret in `path` as ReadSecretFile reads it, made first if there is no file: 32 bytes of
// the kernel's CSPRNG as 64 hex digits, mode 0600, missing parent folders created (the first
// of two daemons starting at once to make it wins; the other reads it). An existing file must
// also hold at least 32 bytes. FAILED_PRECONDITION when there is none and none can be made (a
// read-only folder), INVALID_ARGUMENT when a file is there but unusable (readable by others,
// too short, unreadable).
absl::StatusOr<std::string> ReadOrCreateSecretFile(const std::string& path, absl::string_view what);

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_ENTRY_SIGNATURE_H_
