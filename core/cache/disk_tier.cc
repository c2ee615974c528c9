#include "core/cache/disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/cache/entry_signature.h"
#include "core/util/log.h"

namespace uopd {
namespace fs = std::filesystem;
namespace {

// Entries of older uopds (UOPDK1: a plain SHA-256 of the payload, which anyone who can write the
// folder can recompute) fail the check like forged ones, as they must: each is a miss, deleted
// and counted corrupt once, and its kernel's next compile replaces it.
constexpr char kMagic[] = "UOPDK2\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr size_t kMacSize = 32;
constexpr size_t kHeaderSize = kMagicSize + kMacSize;
constexpr char kSuffix[] = ".uopd";

bool ValidKey(const std::string& key) {
  if (key.size() != 64) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string ShardOf(const std::string& key) { return key.substr(0, 2); }
std::string FileOf(const std::string& key) { return key + kSuffix; }

std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat(".tmp.", getpid(), ".", counter.fetch_add(1), ".", rng());
}

bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ReadAll(int fd, size_t size_hint, std::string* out) {
  out->clear();
  out->reserve(size_hint);
  char buffer[1 << 16];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

// A file descriptor, closed when it goes.
class DiskTier::Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

DiskTier::DiskTier(std::string dir, int64_t capacity_bytes, std::vector<std::string> secrets)
    : dir_(std::move(dir)), capacity_(capacity_bytes), secrets_(std::move(secrets)) {}

absl::StatusOr<std::unique_ptr<DiskTier>> DiskTier::Open(std::string dir, int64_t capacity_bytes,
                                                         std::vector<std::string> secrets) {
  if (secrets.empty() ||
      std::any_of(secrets.begin(), secrets.end(), [](const std::string& s) { return s.empty(); })) {
    return absl::InvalidArgumentError("the disk cache needs a secret to authenticate its entries");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || access(dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cache directory ", dir, " is not writable: ", ec ? ec.message() : "permission denied"));
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(std::move(dir), capacity_bytes, std::move(secrets)));
  tier->maintenance_ = std::thread([t = tier.get()] { t->MaintenanceLoop(); });
  return tier;
}

DiskTier::~DiskTier() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  maintenance_.join();
}

std::string DiskTier::PathOf(const std::string& key) const {
  return absl::StrCat(dir_, "/", ShardOf(key), "/", FileOf(key));
}

absl::StatusOr<DiskTier::Fd> DiskTier::OpenShard(const std::string& shard, bool create) const {
  Fd dir(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.ok() && errno == ENOENT && create) {
    std::error_code ec;  // removed while serving: made again, as the first Put made it
    fs::create_directories(dir_, ec);
    dir = Fd(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  if (!dir.ok()) {
    if (errno == ENOENT) return absl::NotFoundError(dir_);
    return absl::UnavailableError(
        absl::StrCat("cannot open cache directory ", dir_, ": ", std::strerror(errno)));
  }
  if (create && mkdirat(dir.get(), shard.c_str(), 0777) != 0 && errno != EEXIST) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", dir_, "/", shard, ": ", std::strerror(errno)));
  }
  // A shard that is a link would let whoever can write the folder point the daemon's reads
  // and writes anywhere it can reach.
  Fd fd(openat(dir.get(), shard.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(dir_, "/", shard));
    if (errno == ELOOP || errno == ENOTDIR) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cache shard ", dir_, "/", shard, " is not a folder (a symbolic link?): not followed"));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot open ", dir_, "/", shard, ": ", std::strerror(errno)));
  }
  return fd;
}

bool DiskTier::RemoveFile(const std::string& shard, const std::string& name, int64_t* size) const {
  absl::StatusOr<Fd> dir = OpenShard(shard, /*create=*/false);
  if (!dir.ok()) return false;
  struct stat info;
  if (fstatat(dir->get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (unlinkat(dir->get(), name.c_str(), 0) != 0) return false;
  if (size != nullptr) *size = static_cast<int64_t>(info.st_size);
  return true;
}

void DiskTier::Drop(const std::string& key, absl::string_view why) {
  // Never served; deleted so the next Put rebuilds it.
  int64_t size = 0;
  if (RemoveFile(ShardOf(key), FileOf(key), &size)) {
    counters_.entries.fetch_sub(1);
    counters_.bytes.fetch_sub(size);
  }
  counters_.corrupt.fetch_add(1);
  counters_.misses.fetch_add(1);
  Log(LogLevel::kWarning, "disk cache entry failed its check: dropped",
      {{"key", key}, {"why", std::string(why)}});
}

bool DiskTier::Authentic(const std::string& key, absl::string_view payload,
                         absl::string_view mac) const {
  return std::any_of(secrets_.begin(), secrets_.end(), [&](const std::string& secret) {
    return EntrySignatureValid(secret, key, payload, mac);
  });
}

bool DiskTier::Contains(const std::string& key) {
  if (!ValidKey(key)) return false;
  absl::StatusOr<Fd> shard = OpenShard(ShardOf(key), /*create=*/false);
  if (!shard.ok()) return false;
  // A regular file of at most an entry's size, not read: one damaged inside is a miss when
  // read, and removed then (a FindMissing that said it was here was advice, not a promise).
  struct stat info;
  return fstatat(shard->get(), FileOf(key).c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(info.st_mode) && info.st_size <= static_cast<off_t>(kHeaderSize + kMaxEntryBytes);
}

absl::StatusOr<std::optional<std::string>> DiskTier::Get(const std::string& key) {
  if (!ValidKey(key)) return absl::InvalidArgumentError("cache keys are 64 lowercase hex digits");
  absl::StatusOr<Fd> shard = OpenShard(ShardOf(key), /*create=*/false);
  if (!shard.ok()) {
    if (absl::IsNotFound(shard.status())) {
      counters_.misses.fetch_add(1);
      return std::optional<std::string>();
    }
    counters_.errors.fetch_add(1);
    return shard.status();
  }
  // O_NOFOLLOW: an entry that is a link is not read through; O_NONBLOCK: a FIFO put in its
  // place does not hang the read (regular files ignore it).
  Fd file(
      openat(shard->get(), FileOf(key).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!file.ok()) {
    if (errno == ENOENT) {
      counters_.misses.fetch_add(1);
      return std::optional<std::string>();
    }
    if (errno == ELOOP) {
      Drop(key, "a symbolic link");
      return std::optional<std::string>();
    }
    counters_.errors.fetch_add(1);
    return absl::UnavailableError(
        absl::StrCat("cannot open cache entry ", PathOf(key), ": ", std::strerror(errno)));
  }
  struct stat info;
  if (fstat(file.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    Drop(key, "not a regular file");
    return std::optional<std::string>();
  }
  if (info.st_size > static_cast<off_t>(kHeaderSize + kMaxEntryBytes)) {
    Drop(key, "larger than any entry");  // read whole, it would cost its size in memory
    return std::optional<std::string>();
  }
  std::string data;
  if (!ReadAll(file.get(), static_cast<size_t>(info.st_size), &data)) {
    counters_.errors.fetch_add(1);
    return absl::UnavailableError(
        absl::StrCat("cannot read cache entry ", PathOf(key), ": ", std::strerror(errno)));
  }
  const absl::string_view view(data);
  if (data.size() < kHeaderSize || !absl::StartsWith(view, kMagic) ||
      !Authentic(key, view.substr(kHeaderSize), view.substr(kMagicSize, kMacSize))) {
    Drop(key, "damaged, from an older uopd, or not written with this daemon's secret");
    return std::optional<std::string>();
  }
  futimens(file.get(), nullptr);  // now: this entry was used
  counters_.hits.fetch_add(1);
  return std::optional<std::string>(data.substr(kHeaderSize));
}

absl::Status DiskTier::Put(const std::string& key, const std::string& value) {
  if (!ValidKey(key)) return absl::InvalidArgumentError("cache keys are 64 lowercase hex digits");
  if (static_cast<int64_t>(value.size()) > kMaxEntryBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a cache entry of ", value.size(), " bytes is past the disk tier's bound"));
  }
  absl::StatusOr<Fd> shard = OpenShard(ShardOf(key), /*create=*/true);
  if (!shard.ok()) {
    counters_.errors.fetch_add(1);
    return shard.status();
  }
  const std::string name = FileOf(key);
  const std::string temp = name + TempSuffix();
  const std::string header = absl::StrCat(kMagic, SignEntry(secrets_.front(), key, value));
  bool written = false;
  {
    // O_EXCL | O_NOFOLLOW: a link waiting under the temporary name is not written through.
    Fd out(openat(shard->get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0666));
    written = out.ok() && WriteAll(out.get(), header) && WriteAll(out.get(), value);
  }
  if (!written) {
    unlinkat(shard->get(), temp.c_str(), 0);
    counters_.errors.fetch_add(1);
    return absl::UnavailableError(
        absl::StrCat("cannot write cache entry ", dir_, "/", ShardOf(key), "/", temp));
  }
  struct stat info;
  const bool existed = fstatat(shard->get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0;
  // Replaces whatever has the name (a link included) without following it.
  if (renameat(shard->get(), temp.c_str(), shard->get(), name.c_str()) != 0) {
    unlinkat(shard->get(), temp.c_str(), 0);
    counters_.errors.fetch_add(1);
    return absl::UnavailableError(absl::StrCat("cannot rename cache entry into ", PathOf(key)));
  }
  counters_.puts.fetch_add(1);
  if (!existed) {
    counters_.entries.fetch_add(1);
    counters_.bytes.fetch_add(static_cast<int64_t>(kHeaderSize + value.size()));
  }
  if (counters_.bytes.load() > capacity_) {
    absl::MutexLock lock(&mu_);
    evict_requested_ = true;
  }
  return absl::OkStatus();
}

absl::Status DiskTier::Erase(const std::string& key) {
  if (!ValidKey(key)) return absl::InvalidArgumentError("cache keys are 64 lowercase hex digits");
  int64_t size = 0;
  if (RemoveFile(ShardOf(key), FileOf(key), &size)) {
    counters_.entries.fetch_sub(1);
    counters_.bytes.fetch_sub(size);
  }
  return absl::OkStatus();
}

void DiskTier::MaintenanceLoop() {
  Scan();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      idle_ = true;
      mu_.Await(absl::Condition(
          +[](DiskTier* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu_) {
            return t->stopping_ || t->evict_requested_;
          },
          this));
      if (stopping_) return;
      evict_requested_ = false;
      idle_ = false;
    }
    Evict();
  }
}

// Scan and Evict look only at regular files directly inside a shard (the iterator does not
// follow links to folders, and links are not entries), and delete through RemoveFile, so a
// shard swapped for a link while they run is refused rather than followed.
void DiskTier::Scan() {
  int64_t entries = 0, bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it.depth() != 1 || it->symlink_status(ec).type() != fs::file_type::regular) continue;
    const std::string name = it->path().filename().string();
    if (absl::StrContains(name, ".tmp.")) {
      // Left by a process that died mid-write; older than a minute, so nobody is writing it.
      auto age = fs::file_time_type::clock::now() - it->last_write_time(ec);
      if (age > std::chrono::minutes(1)) {
        RemoveFile(it->path().parent_path().filename().string(), name, nullptr);
      }
      continue;
    }
    if (!absl::EndsWith(name, kSuffix)) continue;
    ++entries;
    bytes += static_cast<int64_t>(it->file_size(ec));
  }
  // Puts that raced with the scan are already counted; the scan only adds what was there.
  counters_.entries.store(entries);
  counters_.bytes.store(bytes);
  if (bytes > capacity_) {
    absl::MutexLock lock(&mu_);
    evict_requested_ = true;
  }
}

void DiskTier::Evict() {
  struct File {
    std::string shard, name;
    fs::file_time_type mtime;
    int64_t size;
  };
  std::vector<File> files;
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it.depth() != 1 || it->symlink_status(ec).type() != fs::file_type::regular ||
        it->path().extension() != kSuffix) {
      continue;
    }
    File f{it->path().parent_path().filename().string(), it->path().filename().string(),
           it->last_write_time(ec), static_cast<int64_t>(it->file_size(ec))};
    total += f.size;
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.mtime < b.mtime; });
  // Evict down to 90% so a tier at its bound does not evict on every put.
  const int64_t target = capacity_ - capacity_ / 10;
  int64_t entries = static_cast<int64_t>(files.size());
  for (const File& f : files) {
    if (total <= target) break;
    if (RemoveFile(f.shard, f.name, nullptr)) {
      total -= f.size;
      --entries;
      counters_.evictions.fetch_add(1);
    }
  }
  counters_.entries.store(entries);
  counters_.bytes.store(total);
}

void DiskTier::TEST_WaitForMaintenance() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](DiskTier* t)
           ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu_) { return t->idle_ && !t->evict_requested_; },
      this));
}

}  // namespace uopd
