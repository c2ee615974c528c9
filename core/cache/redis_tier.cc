#include "core/cache/redis_tier.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/cache/entry_signature.h"
#include "core/util/log.h"

namespace uopd {
namespace {

// A value in Redis: this magic, the entry's HMAC-SHA256 (32 bytes), the entry.
constexpr absl::string_view kMagic = "UOPDSIG1";
constexpr size_t kSignatureBytes = 32;
// Rejected keys remembered for logging once each; past this many, the counter still counts.
constexpr size_t kMaxLoggedRejections = 10'000;

timeval TimeoutOf(absl::Duration d) {
  return absl::ToTimeval(d < absl::ZeroDuration() ? absl::ZeroDuration() : d);
}

absl::StatusOr<std::string> PercentDecode(absl::string_view text, absl::string_view what) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    int value = 0;
    if (i + 2 >= text.size() || !absl::SimpleHexAtoi(text.substr(i + 1, 2), &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis URL: the ", what, " has a bad %-escape at byte ", i));
    }
    out.push_back(static_cast<char>(value));
    i += 2;
  }
  return out;
}

// One command, its arguments binary-safe; nullptr on an I/O error or time-out (c->errstr says).
redisReply* RunCommand(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lengths;
  for (const std::string& arg : argv) {
    args.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  return static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lengths.data()));
}

}  // namespace

absl::StatusOr<RedisAddress> ParseRedisUrl(const std::string& url) {
  constexpr absl::string_view kScheme = "redis://";
  if (!absl::StartsWith(url, kScheme)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "redis URL '", url,
        "' does not start with redis:// (the form is "
        "redis://[user:password@]host[:port][/db]; TLS (rediss://) is not supported)"));
  }
  absl::string_view rest = absl::string_view(url).substr(kScheme.size());
  RedisAddress address;
  if (size_t at = rest.rfind('@'); at != absl::string_view::npos) {
    absl::string_view credentials = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = credentials.find(':');
    if (colon == absl::string_view::npos) {
      // redis://password@host is how several clients spell a password without a user.
      auto password = PercentDecode(credentials, "password");
      if (!password.ok()) return password.status();
      address.password = *std::move(password);
    } else {
      auto user = PercentDecode(credentials.substr(0, colon), "user");
      if (!user.ok()) return user.status();
      auto password = PercentDecode(credentials.substr(colon + 1), "password");
      if (!password.ok()) return password.status();
      address.user = *std::move(user);
      address.password = *std::move(password);
    }
  }
  absl::string_view host_port = rest;
  if (size_t slash = rest.find('/'); slash != absl::string_view::npos) {
    host_port = rest.substr(0, slash);
    absl::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!absl::SimpleAtoi(db, &address.db) || address.db < 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis URL '", url, "': database '", db, "' is not a number >= 0"));
    }
  }
  absl::string_view port_text;
  if (absl::StartsWith(host_port, "[")) {  // [::1]:6379
    size_t close = host_port.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("redis URL '", url, "': unclosed '['"));
    }
    address.host = std::string(host_port.substr(1, close - 1));
    absl::string_view after = host_port.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') {
        return absl::InvalidArgumentError(
            absl::StrCat("redis URL '", url, "': expected ':port' after the host"));
      }
      port_text = after.substr(1);
    }
  } else if (size_t colon = host_port.rfind(':'); colon != absl::string_view::npos) {
    address.host = std::string(host_port.substr(0, colon));
    port_text = host_port.substr(colon + 1);
  } else {
    address.host = std::string(host_port);
  }
  if (address.host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("redis URL '", url, "' has no host"));
  }
  if (!port_text.empty() &&
      (!absl::SimpleAtoi(port_text, &address.port) || address.port < 1 || address.port > 65535)) {
    return absl::InvalidArgumentError(
        absl::StrCat("redis URL '", url, "': port '", port_text, "' is not in 1..65535"));
  }
  return address;
}

void RedisTier::ContextDeleter::operator()(redisContext* c) const { redisFree(c); }

RedisTier::RedisTier(RedisTierOptions options) : options_(std::move(options)) {
  publisher_ = std::thread([this] { PublishLoop(); });
}

RedisTier::~RedisTier() {
  // What is queued gets a short chance to reach Redis; the daemon is going away either way.
  Flush(options_.command_timeout);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  publisher_.join();
}

bool RedisTier::BreakerAllows() {
  absl::MutexLock lock(&mu_);
  if (consecutive_failures_ < options_.breaker_failures) return true;
  const absl::Time now = absl::Now();
  if (now < open_until_) return false;
  // Half open: this caller tries; everyone else waits for another open period unless it
  // succeeds first.
  open_until_ = now + options_.breaker_open;
  return true;
}

void RedisTier::Succeeded() {
  absl::MutexLock lock(&mu_);
  if (consecutive_failures_ >= options_.breaker_failures) {
    Log(LogLevel::kInfo, "redis cache tier reachable again",
        {{"host", options_.address.host}, {"port", absl::StrCat(options_.address.port)}});
  }
  consecutive_failures_ = 0;
  open_until_ = absl::InfinitePast();
  logged_open_ = false;
}

void RedisTier::Failed(const std::string& why) {
  counters_.errors.fetch_add(1);
  absl::MutexLock lock(&mu_);
  ++consecutive_failures_;
  if (consecutive_failures_ == options_.breaker_failures) {
    open_until_ = absl::Now() + options_.breaker_open;
    ++breaker_trips_;
  }
  if (consecutive_failures_ >= options_.breaker_failures && !logged_open_) {
    logged_open_ = true;
    Log(LogLevel::kWarning, "redis cache tier unavailable: serving from local tiers",
        {{"host", options_.address.host},
         {"port", absl::StrCat(options_.address.port)},
         {"error", why},
         {"retry_after", absl::FormatDuration(options_.breaker_open)}});
  }
}

absl::StatusOr<RedisTier::Connection> RedisTier::Connect() {
  const RedisAddress& a = options_.address;
  Connection c(
      redisConnectWithTimeout(a.host.c_str(), a.port, TimeoutOf(options_.connect_timeout)));
  if (c == nullptr) return absl::UnavailableError("redis: cannot allocate a connection");
  if (c->err != 0) {
    return absl::UnavailableError(absl::StrCat("redis ", a.host, ":", a.port, ": ", c->errstr));
  }
  if (redisSetTimeout(c.get(), TimeoutOf(options_.command_timeout)) != REDIS_OK) {
    return absl::UnavailableError(
        absl::StrCat("redis: cannot set the command timeout: ", c->errstr));
  }
  redisEnableKeepAlive(c.get());
  auto setup = [&](const std::vector<std::string>& argv) -> absl::Status {
    redisReply* reply = RunCommand(c.get(), argv);
    if (reply == nullptr) {
      return absl::UnavailableError(absl::StrCat("redis ", argv[0], ": ", c->errstr));
    }
    absl::Status status = absl::OkStatus();
    if (reply->type == REDIS_REPLY_ERROR) {
      // The password is not in the message: Redis answers WRONGPASS or NOAUTH.
      status = absl::UnavailableError(
          absl::StrCat("redis ", argv[0], " refused: ", std::string(reply->str, reply->len)));
    }
    freeReplyObject(reply);
    return status;
  };
  if (!a.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!a.user.empty()) auth.push_back(a.user);
    auth.push_back(a.password);
    if (absl::Status s = setup(std::move(auth)); !s.ok()) return s;
  }
  if (a.db != 0) {
    if (absl::Status s = setup({"SELECT", absl::StrCat(a.db)}); !s.ok()) return s;
  }
  return c;
}

absl::StatusOr<RedisTier::Connection> RedisTier::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      Connection c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  auto c = Connect();
  if (!c.ok()) Failed(std::string(c.status().message()));
  return c;
}

void RedisTier::Release(Connection connection) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(idle_.size()) < options_.max_idle_connections) {
    idle_.push_back(std::move(connection));
  }
}

absl::StatusOr<std::optional<std::string>> RedisTier::Command(
    const std::vector<std::string>& argv) {
  if (!BreakerAllows()) return absl::UnavailableError("redis: not asking (circuit breaker open)");
  auto connection = Acquire();
  if (!connection.ok()) return connection.status();
  redisReply* reply = RunCommand(connection->get(), argv);
  if (reply == nullptr) {
    // I/O error or timeout: the connection's state is unknown, so it is not reused.
    std::string why = absl::StrCat("redis ", argv[0], ": ", (*connection)->errstr);
    Failed(why);
    return absl::UnavailableError(why);
  }
  absl::StatusOr<std::optional<std::string>> result = std::nullopt;
  if (reply->type == REDIS_REPLY_STRING) {
    result = std::string(reply->str, reply->len);
  } else if (reply->type == REDIS_REPLY_ERROR) {
    result = absl::FailedPreconditionError(
        absl::StrCat("redis ", argv[0], " refused: ", std::string(reply->str, reply->len)));
  }
  freeReplyObject(reply);
  Succeeded();
  Release(*std::move(connection));
  return result;
}

bool RedisTier::Contains(const std::string& key) {
  // The magic only, not the value: what FindMissing needs (a value whose signature does not
  // hold is a miss when read, and replaced then).
  auto head = Command({"GETRANGE", options_.prefix + key, "0", absl::StrCat(kMagic.size() - 1)});
  return head.ok() && head->has_value() && **head == kMagic;
}

absl::StatusOr<std::optional<std::string>> RedisTier::Get(const std::string& key) {
  auto value = Command({"GETRANGE", options_.prefix + key, "0",
                        absl::StrCat(options_.max_value_bytes)});  // at most one byte too many
  if (!value.ok()) {
    // Redis answered with an error (a cluster node's MOVED, a wrong type...): an error too,
    // though not an outage for the breaker.
    if (!absl::IsUnavailable(value.status())) counters_.errors.fetch_add(1);
    return value.status();
  }
  // GETRANGE answers a missing key with an empty string; no entry is empty.
  if (!value->has_value() || (*value)->empty()) {
    counters_.misses.fetch_add(1);
    return std::nullopt;
  }
  const std::string& stored = **value;
  read_bytes_.fetch_add(static_cast<int64_t>(stored.size()));
  const size_t header = kMagic.size() + kSignatureBytes;
  bool valid =
      stored.size() >= header && static_cast<int64_t>(stored.size()) <= options_.max_value_bytes &&
      absl::StartsWith(stored, kMagic) &&
      EntrySignatureValid(options_.cluster_key, key, absl::string_view(stored).substr(header),
                          absl::string_view(stored).substr(kMagic.size(), kSignatureBytes));
  if (!valid) {
    // Whoever wrote it does not hold the cluster key (or the bytes were altered): never used.
    // The local compile that follows publishes a signed entry over it.
    rejected_.fetch_add(1);
    counters_.misses.fetch_add(1);
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      if (logged_rejections_.size() < kMaxLoggedRejections) {
        first = logged_rejections_.insert(key).second;
      }
    }
    if (first) {
      Log(LogLevel::kWarning, "redis cache entry rejected: missing or wrong signature",
          {{"key", key}, {"bytes", absl::StrCat(stored.size())}});
    }
    return std::nullopt;
  }
  counters_.hits.fetch_add(1);
  return stored.substr(header);
}

absl::Status RedisTier::Put(const std::string& key, const std::string& value) {
  Publication p;
  p.key = key;
  p.value = absl::StrCat(kMagic, SignEntry(options_.cluster_key, key, value), value);
  absl::MutexLock lock(&mu_);
  if (static_cast<int64_t>(p.value.size()) > options_.max_queued_bytes ||
      static_cast<int64_t>(p.value.size()) > options_.max_value_bytes) {
    publish_dropped_.fetch_add(1);
    return absl::OkStatus();
  }
  queued_bytes_ += static_cast<int64_t>(p.value.size());
  queue_.push_back(std::move(p));
  DropOldestPastBound();
  return absl::OkStatus();
}

absl::Status RedisTier::Erase(const std::string& key) {
  Publication p;
  p.key = key;
  p.erase = true;
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(p));
  return absl::OkStatus();
}

void RedisTier::DropOldestPastBound() {
  while (queued_bytes_ > options_.max_queued_bytes) {
    queued_bytes_ -= static_cast<int64_t>(queue_.front().value.size());
    queue_.pop_front();
    publish_dropped_.fetch_add(1);
  }
}

void RedisTier::PublishLoop() {
  for (;;) {
    Publication p;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](RedisTier* t) { return t->stopping_ || !t->queue_.empty(); }, this));
      if (stopping_) return;
      p = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= static_cast<int64_t>(p.value.size());
      publishing_ = true;
    }
    std::vector<std::string> argv;
    if (p.erase) {
      argv = {"DEL", options_.prefix + p.key};
    } else {
      argv = {"SET", options_.prefix + p.key, p.value};
      if (options_.ttl > absl::ZeroDuration()) {
        argv.push_back("PX");
        argv.push_back(absl::StrCat(absl::ToInt64Milliseconds(options_.ttl)));
      }
    }
    auto done = Command(argv);
    absl::MutexLock lock(&mu_);
    publishing_ = false;
    if (done.ok()) {
      if (!p.erase) {
        published_.fetch_add(1);
        counters_.puts.fetch_add(1);
        written_bytes_.fetch_add(static_cast<int64_t>(p.value.size()));
      }
    } else if (absl::IsUnavailable(done.status())) {
      // Redis is away: keep it for when it returns (at the front, so order holds), and wait
      // a little rather than spin while the breaker is open.
      queued_bytes_ += static_cast<int64_t>(p.value.size());
      queue_.push_front(std::move(p));
      DropOldestPastBound();
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(100));
      if (stopping_) return;
    } else {
      // Redis answered with an error (out of memory with noeviction, read-only replica...):
      // the entry stays local; a later compile elsewhere may publish it.
      publish_failed_.fetch_add(1);
      Log(LogLevel::kWarning, "redis refused a cache entry",
          {{"key", p.key}, {"error", std::string(done.status().message())}});
    }
  }
}

bool RedisTier::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(
      absl::Condition(
          +[](RedisTier* t) { return t->queue_.empty() && !t->publishing_; }, this),
      timeout);
}

TierStats RedisTier::stats() const {
  TierStats s = counters_.Snapshot();
  s.rejected = rejected_.load();
  s.read_bytes = read_bytes_.load();
  s.written_bytes = written_bytes_.load();
  s.published = published_.load();
  s.publish_failed = publish_failed_.load();
  s.publish_dropped = publish_dropped_.load();
  absl::MutexLock lock(&mu_);
  s.publish_queue_bytes = queued_bytes_;
  s.breaker_open = consecutive_failures_ >= options_.breaker_failures && absl::Now() < open_until_;
  s.breaker_trips = breaker_trips_;
  return s;
}

}  // namespace uopd
