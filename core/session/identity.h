// Identity: who makes a call, what they may do, and whose quota they draw on.
//
// With bearer tokens (or client certificates) an identity is a name from the daemon's identity
// file: buffers, plans and quotas belong to it, across connections. Without, each connection is
// its own anonymous identity ("conn:" and 128 random bits, told apart by the connection itself,
// never by its address) and anonymous connections share the quota of their source host.
#ifndef UOPD_CORE_SESSION_IDENTITY_H_
#define UOPD_CORE_SESSION_IDENTITY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopd {

// What an identity may do. Each RPC needs one right (ListDevices and CacheStats none).
enum Right : uint32_t {
  kRightCompile = 1 << 0,       // Compile kernel ASTs
  kRightRun = 1 << 1,           // buffers, Execute, Prepare, RunPlan (compiling what runs)
  kRightCacheRead = 1 << 2,     // CacheService.Get and FindMissing: entries hold source text
  kRightCacheWrite = 1 << 3,    // CacheService.Put: entries are code other identities run
  kRightClientSource = 1 << 4,  // Compile RenderedSource: arbitrary code on this host
  kRightAdmin = 1 << 5,         // everything
};
inline constexpr uint32_t kAllRights = (1u << 6) - 1;

// "compile,run,cache_read,cache_write,client_source,admin" (any subset, comma separated; "all";
// "" or "none" for no rights). INVALID_ARGUMENT naming an unknown right.
absl::StatusOr<uint32_t> ParseRights(absl::string_view list);
std::string RightsToString(uint32_t rights);
const char* RightName(Right right);

struct Identity {
  std::string id;         // owns buffers and plans: "alice", or "conn:<32 hex digits>"
  std::string quota_key;  // whose quota it uses: "alice", or "host:10.0.0.7" for anonymous
  uint32_t rights = 0;
  bool anonymous = true;

  bool Has(Right right) const { return (rights & (right | kRightAdmin)) != 0; }
  // PERMISSION_DENIED naming the identity, the right and `what` it was needed for.
  absl::Status Require(Right right, absl::string_view what) const;
};

// 128 bits from the kernel's CSPRNG as 32 lowercase hex digits: handles, connection ids.
std::string RandomHex128();

}  // namespace uopd

#endif  // UOPD_CORE_SESSION_IDENTITY_H_
