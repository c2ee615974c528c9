// HMAC-SHA256 (RFC 2104), for signing what crosses a trust boundary (shared cache entries).
#ifndef UOPD_CORE_UTIL_HMAC_H_
#define UOPD_CORE_UTIL_HMAC_H_

#include <string>

#include "absl/strings/string_view.h"

namespace uopd {

// The 32-byte MAC of `data` under `key`.
std::string HmacSha256(absl::string_view key, absl::string_view data);

// Whether `a` and `b` are equal, in time that depends only on their lengths.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_HMAC_H_
