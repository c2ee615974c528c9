#include "core/cache/disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/sha256.h"

namespace uopd {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[] = "UOPDK1\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr size_t kHeaderSize = kMagicSize + 32;

bool ValidKey(const std::string& key) {
  if (key.size() != 64) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat(".tmp.", getpid(), ".", counter.fetch_add(1), ".", rng());
}

}  // namespace

DiskTier::DiskTier(std::string dir, int64_t capacity_bytes)
    : dir_(std::move(dir)), capacity_(capacity_bytes) {}

absl::StatusOr<std::unique_ptr<DiskTier>> DiskTier::Open(std::string dir, int64_t capacity_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || access(dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cache directory ", dir, " is not writable: ", ec ? ec.message() : "permission denied"));
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(std::move(dir), capacity_bytes));
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
  return absl::StrCat(dir_, "/", key.substr(0, 2), "/", key, ".uopd");
}

absl::StatusOr<std::optional<std::string>> DiskTier::Get(const std::string& key) {
  if (!ValidKey(key)) return absl::InvalidArgumentError("cache keys are 64 lowercase hex digits");
  const std::string path = PathOf(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    counters_.misses.fetch_add(1);
    return std::optional<std::string>();
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string data = contents.str();
  bool intact = data.size() >= kHeaderSize && data.compare(0, kMagicSize, kMagic) == 0;
  if (intact) {
    Digest digest = Sha256Of(absl::string_view(data).substr(kHeaderSize));
    intact = std::equal(digest.begin(), digest.end(),
                        reinterpret_cast<const uint8_t*>(data.data() + kMagicSize));
  }
  if (!intact) {
    // Never serve it; drop it so the next Put rebuilds it.
    std::error_code ec;
    if (fs::remove(path, ec)) {
      counters_.entries.fetch_sub(1);
      counters_.bytes.fetch_sub(static_cast<int64_t>(data.size()));
    }
    counters_.corrupt.fetch_add(1);
    counters_.misses.fetch_add(1);
    return std::optional<std::string>();
  }
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // now: this entry was used
  counters_.hits.fetch_add(1);
  return std::optional<std::string>(data.substr(kHeaderSize));
}

absl::Status DiskTier::Put(const std::string& key, const std::string& value) {
  if (!ValidKey(key)) return absl::InvalidArgumentError("cache keys are 64 lowercase hex digits");
  const std::string path = PathOf(key);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string temp = path + TempSuffix();
  Digest digest = Sha256Of(value);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(kMagic, kMagicSize);
    out.write(reinterpret_cast<const char*>(digest.data()), digest.size());
    out.write(value.data(), static_cast<std::streamsize>(value.size()));
    if (!out.good()) {
      out.close();
      fs::remove(temp, ec);
      counters_.errors.fetch_add(1);
      return absl::UnavailableError(absl::StrCat("cannot write cache entry ", temp));
    }
  }
  bool existed = fs::exists(path, ec);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    fs::remove(temp, ec);
    counters_.errors.fetch_add(1);
    return absl::UnavailableError(absl::StrCat("cannot rename cache entry into ", path));
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
  const std::string path = PathOf(key);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && fs::remove(path, ec)) {
    counters_.entries.fetch_sub(1);
    counters_.bytes.fetch_sub(static_cast<int64_t>(size));
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

void DiskTier::Scan() {
  int64_t entries = 0, bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (absl::StrContains(name, ".tmp.")) {
      // Left by a process that died mid-write; older than a minute, so nobody is writing it.
      auto age = fs::file_time_type::clock::now() - it->last_write_time(ec);
      if (age > std::chrono::minutes(1)) fs::remove(it->path(), ec);
      continue;
    }
    if (!absl::EndsWith(name, ".uopd")) continue;
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
    fs::path path;
    fs::file_time_type mtime;
    int64_t size;
  };
  std::vector<File> files;
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".uopd") continue;
    File f{it->path(), it->last_write_time(ec), static_cast<int64_t>(it->file_size(ec))};
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
    if (fs::remove(f.path, ec)) {
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
