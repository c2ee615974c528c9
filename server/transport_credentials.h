// The gRPC port's transport: TLS from PEM files, or plaintext.
#ifndef UOPD_SERVER_TRANSPORT_CREDENTIALS_H_
#define UOPD_SERVER_TRANSPORT_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace uopd {

struct TlsFiles {
  std::string cert;       // the server's certificate chain (PEM); "" = plaintext
  std::string key;        // its private key (PEM)
  std::string client_ca;  // "" = no client certificates; else required and verified against it
};

// TLS credentials for `files`, or insecure ones when no certificate is given. INVALID_ARGUMENT
// naming the file that cannot be read, or a key without a certificate (or the reverse).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const TlsFiles& files);

// Whether `listen` ("127.0.0.1:50051", "[::1]:0", "localhost:1", "unix:/path") only accepts
// connections from this machine.
bool IsLocalAddress(const std::string& listen);

// "unix:/run/uopd.sock" or "unix:///run/uopd.sock" -> "/run/uopd.sock".
std::string UnixSocketPath(const std::string& listen);

}  // namespace uopd

#endif  // UOPD_SERVER_TRANSPORT_CREDENTIALS_H_
