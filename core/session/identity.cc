#include "core/session/identity.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace uopd {
namespace {

constexpr Right kRights[] = {kRightCompile,    kRightRun,          kRightCacheRead,
                             kRightCacheWrite, kRightClientSource, kRightAdmin};

}  // namespace

const char* RightName(Right right) {
  switch (right) {
    case kRightCompile:
      return "compile";
    case kRightRun:
      return "run";
    case kRightCacheRead:
      return "cache_read";
    case kRightCacheWrite:
      return "cache_write";
    case kRightClientSource:
      return "client_source";
    case kRightAdmin:
      return "admin";
  }
  return "?";
}

absl::StatusOr<uint32_t> ParseRights(absl::string_view list) {
  uint32_t rights = 0;
  for (absl::string_view word : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    word = absl::StripAsciiWhitespace(word);
    if (word == "all") {
      rights |= kAllRights;
      continue;
    }
    if (word == "none") continue;
    bool known = false;
    for (Right right : kRights) {
      if (word == RightName(right)) {
        rights |= right;
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown right '", word,
          "' (rights: compile, run, cache_read, cache_write, client_source, admin, all)"));
    }
  }
  return rights;
}

std::string RightsToString(uint32_t rights) {
  std::vector<std::string> names;
  for (Right right : kRights) {
    if (rights & right) names.push_back(RightName(right));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

absl::Status Identity::Require(Right right, absl::string_view what) const {
  if (Has(right)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(anonymous ? "anonymous callers" : absl::StrCat("identity '", id, "'"),
                   " may not ", what, " (that needs the '", RightName(right), "' right)"));
}

std::string RandomHex128() {
  unsigned char bytes[16];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) std::abort();  // no randomness: handles would be guessable; never serve that way
    filled += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (size_t i = 0; i < sizeof(bytes); ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return out;
}

}  // namespace uopd
