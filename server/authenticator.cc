#include "server/authenticator.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "core/util/sha256.h"
#include "grpc/grpc_security.h"

namespace uopd {
namespace {

constexpr char kConnectionProperty[] = "uopd.connection";

bool IsHexDigest(absl::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The bearer token of the call, "" when it presents none.
std::string BearerToken(const grpc::ServerContextBase& context) {
  auto found = context.client_metadata().find("authorization");
  if (found == context.client_metadata().end()) return "";
  absl::string_view value(found->second.data(), found->second.size());
  if (!absl::ConsumePrefix(&value, "Bearer ") && !absl::ConsumePrefix(&value, "bearer ")) {
    return std::string(1, '\0');  // present but not a bearer token: never matches
  }
  return std::string(absl::StripAsciiWhitespace(value));
}

// The id of the call's connection: random, kept as a property of the connection's auth context
// (gRPC makes one per connection and shares it with every call on it).
std::string ConnectionId(const grpc::ServerContextBase& context) {
  // One lock for every connection: the first call on a connection adds the property, others
  // read it, and none of them may see the property array while it grows.
  static absl::Mutex mu(absl::kConstInit);
  grpc_auth_context* auth =
      grpc_call_auth_context(const_cast<grpc::ServerContextBase&>(context).c_call());
  if (auth == nullptr) return RandomHex128();  // no context: a connection of its own
  absl::MutexLock lock(&mu);
  grpc_auth_property_iterator it =
      grpc_auth_context_find_properties_by_name(auth, kConnectionProperty);
  std::string id;
  if (const grpc_auth_property* property = grpc_auth_property_iterator_next(&it)) {
    id.assign(property->value, property->value_length);
  } else {
    id = RandomHex128();
    grpc_auth_context_add_cstring_property(auth, kConnectionProperty, id.c_str());
  }
  grpc_auth_context_release(auth);
  return id;
}

}  // namespace

std::string HostQuotaKey(const std::string& peer) {
  absl::string_view rest = peer;
  if (absl::ConsumePrefix(&rest, "ipv4:")) {
    const std::string address(rest.substr(0, rest.rfind(':')));
    in_addr v4{};
    if (inet_pton(AF_INET, address.c_str(), &v4) != 1) return absl::StrCat("host:", address);
    // 127.0.0.0/8 is this machine, however many aliases a client connects from.
    if ((ntohl(v4.s_addr) >> 24) == 127) return "local";
    return absl::StrCat("host:", address);
  }
  if (absl::ConsumePrefix(&rest, "ipv6:")) {
    // "[addr]:port", its brackets URL-encoded in newer gRPC.
    std::string address(rest.substr(0, rest.rfind(':')));
    address = absl::StrReplaceAll(address, {{"%5B", ""}, {"%5D", ""}, {"[", ""}, {"]", ""}});
    in6_addr v6{};
    if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return absl::StrCat("host:", address);
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return "local";
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      if (v6.s6_addr[12] == 127) return "local";
      return absl::StrCat("host:", int{v6.s6_addr[12]}, ".", int{v6.s6_addr[13]}, ".",
                          int{v6.s6_addr[14]}, ".", int{v6.s6_addr[15]});
    }
    // A host is given a /64 (RFC 6177 and every ISP): within it an attacker has 2^64 addresses.
    for (int i = 8; i < 16; ++i) v6.s6_addr[i] = 0;
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &v6, text, sizeof(text));
    return absl::StrCat("host:", text, "/64");
  }
  return "local";
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(const AuthConfig& config) {
  std::string text;
  if (!config.identities_file.empty()) {
    std::ifstream in(config.identities_file);
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read the identity file ", config.identities_file));
    }
    std::stringstream contents;
    contents << in.rdbuf();
    text = contents.str();
  }
  return FromText(text, config.identities_file, config.anonymous_rights);
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::FromText(const std::string& text,
                                                                       const std::string& source,
                                                                       uint32_t anonymous_rights) {
  std::unique_ptr<Authenticator> auth(new Authenticator);
  auth->anonymous_rights_ = anonymous_rights;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (fields.empty()) continue;
    auto error = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_number, ": ", why));
    };
    if (fields.size() != 3) return error("expected NAME RIGHTS CREDENTIAL");
    Named named{std::string(fields[0]), 0};
    if (absl::StartsWith(named.name, "conn:")) return error("names may not start with 'conn:'");
    absl::StatusOr<uint32_t> rights = ParseRights(fields[1]);
    if (!rights.ok()) return error(rights.status().message());
    named.rights = *rights;
    absl::string_view credential = fields[2];
    if (absl::ConsumePrefix(&credential, "token:")) {
      if (credential.size() < 16) return error("tokens must have at least 16 characters");
      auth->by_token_digest_[DigestToHex(Sha256Of(credential))] = named;
    } else if (absl::ConsumePrefix(&credential, "sha256:")) {
      std::string digest = absl::AsciiStrToLower(credential);
      if (!IsHexDigest(digest)) return error("sha256: needs 64 hex digits");
      auth->by_token_digest_[digest] = named;
    } else if (absl::ConsumePrefix(&credential, "x509:")) {
      if (credential.empty()) return error("x509: needs a common name");
      auth->by_certificate_[std::string(credential)] = named;
    } else {
      return error("the credential must start with token:, sha256: or x509:");
    }
    if (!auth->named_.emplace(named.name, named).second) {
      return error(absl::StrCat("identity '", named.name, "' is listed twice"));
    }
  }
  return auth;
}

Identity Authenticator::Anonymous(const grpc::ServerContextBase& context) const {
  Identity who;
  who.id = absl::StrCat("conn:", ConnectionId(context));
  who.quota_key = HostQuotaKey(context.peer());
  who.rights = anonymous_rights_;
  who.anonymous = true;
  return who;
}

absl::StatusOr<Identity> Authenticator::Authenticate(const grpc::ServerContextBase& context) const {
  const std::string token = BearerToken(context);
  const Named* named = nullptr;
  if (!token.empty()) {
    auto it = by_token_digest_.find(DigestToHex(Sha256Of(token)));
    if (it == by_token_digest_.end()) {
      return absl::UnauthenticatedError("the bearer token is not one this server knows");
    }
    named = &it->second;
  } else if (!by_certificate_.empty()) {
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      for (const grpc::string_ref& name : auth->FindPropertyValues("x509_common_name")) {
        auto it = by_certificate_.find(std::string(name.data(), name.size()));
        if (it != by_certificate_.end()) named = &it->second;
      }
    }
  }
  if (named != nullptr) {
    return Identity{named->name, named->name, named->rights, /*anonymous=*/false};
  }
  if (anonymous_rights_ == 0) {
    return absl::UnauthenticatedError(
        "this server needs a credential: send 'authorization: Bearer <token>'");
  }
  return Anonymous(context);
}

}  // namespace uopd
