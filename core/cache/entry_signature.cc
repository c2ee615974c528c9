#include "core/cache/entry_signature.h"

#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/util/hmac.h"

namespace uopd {
namespace {

std::string SignedBytes(absl::string_view key_hex, absl::string_view value) {
  const uint64_t length = key_hex.size();
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return absl::StrCat(bytes, key_hex, value);
}

}  // namespace

std::string SignEntry(absl::string_view cluster_key, absl::string_view key_hex,
                      absl::string_view value) {
  return HmacSha256(cluster_key, SignedBytes(key_hex, value));
}

bool EntrySignatureValid(absl::string_view cluster_key, absl::string_view key_hex,
                         absl::string_view value, absl::string_view signature) {
  return ConstantTimeEquals(SignEntry(cluster_key, key_hex, value), signature);
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path, absl::string_view what) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, " ", path));
  }
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " is readable by others (chmod 600 it)"));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  std::string secret(absl::StripTrailingAsciiWhitespace(contents.str()));
  if (secret.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " is empty"));
  return secret;
}

absl::StatusOr<std::string> ReadClusterKey(const std::string& path) {
  auto read = ReadSecretFile(path, "the cluster key");
  if (!read.ok()) return read.status();
  std::string key = *std::move(read);
  if (key.size() < 32) {
    return absl::InvalidArgumentError(
        absl::StrCat("the cluster key ", path, " has ", key.size(),
                     " bytes; it needs at least 32 (e.g. `head -c 32 /dev/urandom | base64`)"));
  }
  return key;
}

}  // namespace uopd
