// SHA-256 through OpenSSL: the digest behind AST hashes and cache keys.
#ifndef UOPD_CORE_UTIL_SHA256_H_
#define UOPD_CORE_UTIL_SHA256_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace uopd {

using Digest = std::array<uint8_t, 32>;

// Incremental SHA-256. One thread at a time.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(absl::string_view data) { Update(data.data(), data.size()); }
  // Appends a fixed-width little-endian integer, so variable data needs no separator.
  void UpdateU64(uint64_t value);
  // Appends the length, then the bytes: unambiguous framing of variable-length fields.
  void UpdateFramed(absl::string_view data);
  // REQUIRES: called once; the object is spent afterwards.
  Digest Finish();

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque so OpenSSL headers stay out of ours.
};

Digest Sha256Of(absl::string_view data);
std::string DigestToHex(const Digest& digest);

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_SHA256_H_
