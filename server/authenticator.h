// Authenticator: turns a call into the Identity it acts as.
//
// 1. A bearer token (`authorization: Bearer <token>` metadata) found in the identity file: that
//    identity. A token not in the file: UNAUTHENTICATED (never a silent fallback).
// 2. A verified TLS client certificate whose common name the identity file lists: that identity.
// 3. Otherwise the connection's anonymous identity, with the anonymous rights (none: the call
//    gets UNAUTHENTICATED). Its id is random, stored on the connection's gRPC auth context the
//    first time the connection is seen, so a new connection from a reused address or over a
//    unix socket owns nothing of an earlier one; its quota is its source host's.
//
// The identity file, one identity per line ('#' starts a comment):
//   NAME  RIGHTS  CREDENTIAL
//   alice  compile,run  token:8f1c...          the bearer token itself
//   ci     compile,cache_write  sha256:9f86...  SHA-256 (hex) of the token: the file holds no
//   secret node7  compile,run  x509:node7.cluster     a client certificate's common name
#ifndef UOPD_SERVER_AUTHENTICATOR_H_
#define UOPD_SERVER_AUTHENTICATOR_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/session/identity.h"
#include "grpcpp/server_context.h"

namespace uopd {

struct AuthConfig {
  std::string identities_file;    // "" = no named identities
  uint32_t anonymous_rights = 0;  // rights of calls that present no credential
};

// Immutable after Create: safe for concurrent use.
class Authenticator {
 public:
  // INVALID_ARGUMENT naming the file and line for a malformed identity file.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(const AuthConfig& config);
  // Parses identity-file text (for tests); `source` names it in errors.
  static absl::StatusOr<std::unique_ptr<Authenticator>> FromText(const std::string& text,
                                                                 const std::string& source,
                                                                 uint32_t anonymous_rights);

  absl::StatusOr<Identity> Authenticate(const grpc::ServerContextBase& context) const;

  int identities() const { return static_cast<int>(named_.size()); }
  uint32_t anonymous_rights() const { return anonymous_rights_; }

 private:
  struct Named {
    std::string name;
    uint32_t rights = 0;
  };
  Authenticator() = default;
  Identity Anonymous(const grpc::ServerContextBase& context) const;

  absl::flat_hash_map<std::string, Named> by_token_digest_;  // hex SHA-256 of the token
  absl::flat_hash_map<std::string, Named> by_certificate_;   // x509 common name
  absl::flat_hash_map<std::string, Named> named_;            // by name
  uint32_t anonymous_rights_ = 0;
};

// The quota key of anonymous calls from `peer` (grpc::ServerContext::peer()): "local" for this
// machine (unix sockets, 127.0.0.0/8, ::1), "host:<address>" for other IPv4 hosts, and
// "host:<prefix>/64" for IPv6, whose hosts each hold a /64.
std::string HostQuotaKey(const std::string& peer);

}  // namespace uopd

#endif  // UOPD_SERVER_AUTHENTICATOR_H_
