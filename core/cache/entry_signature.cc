#include "core/cache/entry_signature.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
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

// `size` bytes from the kernel's CSPRNG, hex-encoded.
absl::StatusOr<std::string> RandomHex(size_t size) {
  std::string bytes(size, '\0');
  size_t filled = 0;
  while (filled < size) {
    ssize_t n = getrandom(bytes.data() + filled, size - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
    filled += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(bytes);
}

// Writes a new secret to `path` unless a file is there already.
absl::Status CreateSecretFile(const std::string& path, absl::string_view what) {
  auto cannot = [&](absl::string_view step) {
    return absl::FailedPreconditionError(absl::StrCat("cannot create ", what, " ", path, " (", step,
                                                      ": ", std::strerror(errno), ")"));
  };
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  auto secret = RandomHex(32);
  auto suffix = RandomHex(8);
  if (!secret.ok()) return secret.status();
  if (!suffix.ok()) return suffix.status();
  // Written whole under another name first, so no reader ever sees half a secret.
  const std::string temp = absl::StrCat(path, ".tmp.", getpid(), ".", *suffix);
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return cannot("open");
  const std::string contents = absl::StrCat(*secret, "\n");
  const bool written =
      write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size()) &&
      fsync(fd) == 0;
  close(fd);
  // link, not rename: a secret another daemon made meanwhile is kept (entries may already be
  // signed with it), and this one is dropped.
  const bool linked = written && (link(temp.c_str(), path.c_str()) == 0 || errno == EEXIST);
  absl::Status status = linked ? absl::OkStatus() : cannot(written ? "link" : "write");
  unlink(temp.c_str());
  return status;
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

absl::StatusOr<std::string> ReadOrCreateSecretFile(const std::string& path,
                                                   absl::string_view what) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0) {
    if (errno != ENOENT) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot reach ", what, " ", path, ": ", std::strerror(errno)));
    }
    if (absl::Status made = CreateSecretFile(path, what); !made.ok()) return made;
  }
  auto read = ReadSecretFile(path, what);
  if (!read.ok()) return read.status();
  if (read->size() < 32) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " has ", read->size(),
                     " bytes; it needs at least 32 (delete it and a new one is made)"));
  }
  return read;
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
