// Identities, transport and quotas against a real daemon: bearer tokens, TLS with client
// certificates, anonymous connections (over TCP and a unix socket), and quotas on memory.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/uopd_client.h"
#include "core/util/sha256.h"
#include "gtest/gtest.h"
#include "server/authenticator.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/daemon_requests.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::CompileOf;
using testing::DaemonProcess;
using testing::ScaleKernel;
using testing::StatusIs;
using v1::DType;

constexpr char kAliceToken[] = "alice-token-5b1f0c9e7d";
constexpr char kBobToken[] = "bob-token-8a2e44c1f0";
constexpr char kCarolToken[] = "carol-token-c3d9e2a7b6";

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// alice may compile and run; bob only compile (his file entry is a digest, not the token);
// carol may run too.
std::string IdentitiesFile(const std::string& dir, const std::string& extra = "") {
  const std::string path = dir + "/identities";
  WriteFile(path,
            absl::StrCat("# name  rights  credential\n", "alice compile,run token:", kAliceToken,
                         "\n", "bob   compile     sha256:", DigestToHex(Sha256Of(kBobToken)), "\n",
                         "carol compile,run token:", kCarolToken, "\n", extra));
  return path;
}

ClientOptions WithToken(const std::string& token) {
  ClientOptions options;
  options.token = token;
  return options;
}

// Anonymous quotas are per host: the aliases of loopback are this one machine (each once got a
// fresh quota), and an IPv6 host is its /64.
TEST(HostQuotaKey, GroupsAddressesByTheHostTheyCanComeFrom) {
  EXPECT_EQ(HostQuotaKey("unix:/tmp/uopd.sock"), "local");
  EXPECT_EQ(HostQuotaKey("ipv4:127.0.0.1:5000"), "local");
  EXPECT_EQ(HostQuotaKey("ipv4:127.0.0.3:5001"), "local");
  EXPECT_EQ(HostQuotaKey("ipv4:127.255.0.9:1"), "local");
  EXPECT_EQ(HostQuotaKey("ipv6:[::1]:5000"), "local");
  EXPECT_EQ(HostQuotaKey("ipv6:%5B::1%5D:5000"), "local");
  EXPECT_EQ(HostQuotaKey("ipv6:[::ffff:127.0.0.2]:5000"), "local");
  EXPECT_EQ(HostQuotaKey("ipv4:10.1.2.3:5000"), "host:10.1.2.3");
  EXPECT_EQ(HostQuotaKey("ipv4:10.1.2.3:6000"), HostQuotaKey("ipv4:10.1.2.3:5000"));
  EXPECT_NE(HostQuotaKey("ipv4:10.1.2.4:5000"), HostQuotaKey("ipv4:10.1.2.3:5000"));
  EXPECT_EQ(HostQuotaKey("ipv6:[::ffff:10.1.2.3]:5000"), "host:10.1.2.3");
  EXPECT_EQ(HostQuotaKey("ipv6:[2001:db8:1:2:aaaa::1]:5000"), "host:2001:db8:1:2::/64");
  EXPECT_EQ(HostQuotaKey("ipv6:[2001:db8:1:2:bbbb:cccc::9]:7"), "host:2001:db8:1:2::/64");
  EXPECT_NE(HostQuotaKey("ipv6:[2001:db8:1:3::1]:7"), HostQuotaKey("ipv6:[2001:db8:1:2::1]:7"));
}

// On a daemon that searches by default, a compile-only identity's DEFAULT compile is a search and
// needs the run right too (it searched before: a review helper's finding); its heuristic compile
// is served.
TEST(Identity, ASearchByTheServersDefaultNeedsTheRunRightToo) {
  const std::string dir = testing::TempDir("default-search");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/cache",
                       {"--identities=" + IdentitiesFile(dir), "--optimization=search"});
  ASSERT_TRUE(daemon.running());
  Client bob(daemon.address(), WithToken(kBobToken));
  EXPECT_TRUE(StatusIs(bob.Compile(CompileOf(ScaleKernel(4, 3.5))),
                       absl::StatusCode::kPermissionDenied,
                       {"identity 'bob'", "'run' right", "search"}));
  v1::CompileRequest heuristic = CompileOf(ScaleKernel(4, 3.5));
  heuristic.mutable_optimization()->set_mode(v1::Optimization::HEURISTIC);
  UOPD_EXPECT_OK(bob.Compile(heuristic));
}

TEST(Identity, TokensNameIdentitiesThatKeepTheirHandlesAcrossConnections) {
  const std::string dir = testing::TempDir("tokens");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/cache", {"--identities=" + IdentitiesFile(dir)});
  ASSERT_TRUE(daemon.running());

  std::string handle;
  {
    Client alice(daemon.address(), WithToken(kAliceToken));
    auto created = alice.CreateBuffer("CPU", DType::UINT8, 4, "abcd");
    UOPD_ASSERT_OK(created);
    handle = *created;
  }
  // A new connection with the same token is the same identity: the handle is still hers.
  Client alice_again(daemon.address(), WithToken(kAliceToken));
  auto mine = alice_again.ReadBuffer(handle);
  UOPD_ASSERT_OK(mine);
  EXPECT_EQ(*mine, "abcd");

  Client carol(daemon.address(), WithToken(kCarolToken));
  EXPECT_TRUE(StatusIs(carol.ReadBuffer(handle), absl::StatusCode::kNotFound));

  Client bob(daemon.address(), WithToken(kBobToken));
  UOPD_EXPECT_OK(bob.Compile(CompileOf(ScaleKernel(4, 1.5))));
  // A search runs kernels and allocates their buffers: compile alone does not allow it.
  v1::CompileRequest search = CompileOf(ScaleKernel(4, 2.5));
  search.mutable_optimization()->set_mode(v1::Optimization::SEARCH);
  EXPECT_TRUE(StatusIs(bob.Compile(search), absl::StatusCode::kPermissionDenied,
                       {"identity 'bob'", "'run' right", "search"}));
  EXPECT_TRUE(StatusIs(bob.CreateBuffer("CPU", DType::UINT8, 4),
                       absl::StatusCode::kPermissionDenied, {"identity 'bob'", "'run' right"}));

  // With an identity file, callers without a credential have no rights by default.
  Client anonymous(daemon.address());
  EXPECT_TRUE(StatusIs(anonymous.ListDevices(), absl::StatusCode::kUnauthenticated, {"Bearer"}));
  Client forged(daemon.address(), WithToken("not-a-token-anyone-was-given"));
  EXPECT_TRUE(StatusIs(forged.ListDevices(), absl::StatusCode::kUnauthenticated,
                       {"not one this server knows"}));
}

TEST(Identity, EachAnonymousConnectionIsItsOwnIdentityEvenOverOneUnixSocket) {
  const std::string dir = testing::TempDir("unix");
  const std::string socket = "unix:" + dir + "/uopd.sock";
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/cache", {"--listen=" + socket});
  ASSERT_TRUE(daemon.running());
  ASSERT_EQ(daemon.address(), socket);
  // Every connection over a unix socket has the same peer address ("unix:"): the identity of
  // an anonymous caller must come from the connection itself.
  Client first(socket), second(socket);
  auto handle = first.CreateBuffer("CPU", DType::UINT8, 3, "xyz");
  UOPD_ASSERT_OK(handle);
  EXPECT_TRUE(StatusIs(second.ReadBuffer(*handle), absl::StatusCode::kNotFound));
  auto again = first.ReadBuffer(*handle);
  UOPD_ASSERT_OK(again);
  EXPECT_EQ(*again, "xyz");
  // A connection that comes after the first is gone owns nothing of it either.
  Client later(socket);
  EXPECT_TRUE(StatusIs(later.ReadBuffer(*handle), absl::StatusCode::kNotFound));
}

TEST(Identity, AnonymousConnectionsOfOneHostShareOneQuota) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("host-quota"),
                       {"--max_client_bytes=1000000"});
  ASSERT_TRUE(daemon.running());
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(std::make_unique<Client>(daemon.address()));
  auto first = clients[0]->CreateBuffer("CPU", DType::UINT8, 600'000);
  UOPD_ASSERT_OK(first);
  // Six connections were six quotas.
  for (int i = 1; i < 6; ++i) {
    EXPECT_TRUE(StatusIs(clients[i]->CreateBuffer("CPU", DType::UINT8, 600'000),
                         absl::StatusCode::kResourceExhausted, {"over its limit of 1000000"}));
  }
  UOPD_ASSERT_OK(clients[0]->FreeBuffer(*first));
  UOPD_EXPECT_OK(clients[3]->CreateBuffer("CPU", DType::UINT8, 600'000));
}

v1::BufferRef* Inline(google::protobuf::RepeatedPtrField<v1::BufferRef>* buffers, int64_t n) {
  v1::BufferRef* ref = buffers->Add();
  ref->mutable_inline_()->set_dtype(DType::FLOAT32);
  ref->mutable_inline_()->set_size(n);
  return ref;
}

TEST(Identity, InlineBuffersAndPlansCountUntilTheirMemoryIsFreed) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("inline-quota"),
                       {"--max_client_bytes=1000000"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  const int64_t n = 150'000;  // 600 kB of float32

  // Two inline buffers of one Execute are summed (each alone was checked before).
  v1::ExecuteRequest both;
  Inline(both.mutable_buffers(), n);
  Inline(both.mutable_buffers(), n);
  *both.add_kernels()->mutable_ast() = ScaleKernel(n, 2.0);
  both.mutable_kernels(0)->add_buffers(0);
  both.mutable_kernels(0)->add_buffers(1);
  EXPECT_TRUE(StatusIs(client.Execute(both), absl::StatusCode::kResourceExhausted,
                       {"buffers[1]", "over its limit"}));

  // An inline buffer a plan keeps counts while the plan lives.
  auto input = client.CreateBuffer("CPU", DType::FLOAT32, 1000);
  UOPD_ASSERT_OK(input);
  v1::PrepareRequest prepare;
  Inline(prepare.mutable_buffers(), 1000);
  v1::BufferRef* big = Inline(prepare.mutable_buffers(), n);
  (void)big;
  prepare.add_buffers()->set_handle(*input);
  *prepare.add_kernels()->mutable_ast() = ScaleKernel(1000, 3.0);
  prepare.mutable_kernels(0)->add_buffers(0);
  prepare.mutable_kernels(0)->add_buffers(2);
  auto plan = client.Prepare(prepare);
  UOPD_ASSERT_OK(plan);
  EXPECT_TRUE(StatusIs(client.CreateBuffer("CPU", DType::FLOAT32, n),
                       absl::StatusCode::kResourceExhausted));
  UOPD_ASSERT_OK(client.ReleasePlan(plan->plan_id()));
  auto after = client.CreateBuffer("CPU", DType::FLOAT32, n);
  UOPD_ASSERT_OK(after);

  // Freeing a handle a plan still holds frees no memory, so it releases no quota.
  v1::PrepareRequest holding;
  holding.add_buffers()->set_handle(*after);
  holding.add_buffers()->set_handle(*input);
  *holding.add_kernels()->mutable_ast() = ScaleKernel(1000, 4.0);
  holding.mutable_kernels(0)->add_buffers(0);
  holding.mutable_kernels(0)->add_buffers(1);
  auto held = client.Prepare(holding);
  UOPD_ASSERT_OK(held);
  UOPD_ASSERT_OK(client.FreeBuffer(*after));
  EXPECT_TRUE(StatusIs(client.CreateBuffer("CPU", DType::FLOAT32, n),
                       absl::StatusCode::kResourceExhausted));
  UOPD_ASSERT_OK(client.ReleasePlan(held->plan_id()));
  UOPD_EXPECT_OK(client.CreateBuffer("CPU", DType::FLOAT32, n));
}

TEST(Identity, APlansBookkeepingIsChargedToItsOwner) {
  // A plan's own memory (per kernel: bindings, dependencies, values) is its owner's to pay for:
  // 300 plans of 10,000 kernels took 1.6 GB charged as nothing.
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("plan-bookkeeping"),
                       {"--max_client_bytes=1000000"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto x = client.CreateBuffer("CPU", DType::FLOAT32, 16);
  auto y = client.CreateBuffer("CPU", DType::FLOAT32, 16);
  UOPD_ASSERT_OK(x);
  UOPD_ASSERT_OK(y);
  auto plan_of = [&](int kernels) {
    v1::PrepareRequest prepare;
    prepare.add_buffers()->set_handle(*x);
    prepare.add_buffers()->set_handle(*y);
    for (int k = 0; k < kernels; ++k) {
      v1::KernelInvocation* kernel = prepare.add_kernels();
      *kernel->mutable_ast() = ScaleKernel(16, 2.0);
      kernel->add_buffers(k % 2);
      kernel->add_buffers(1 - k % 2);
    }
    return prepare;
  };
  EXPECT_TRUE(StatusIs(client.Prepare(plan_of(5000)), absl::StatusCode::kResourceExhausted,
                       {"over its limit of 1000000"}));
  auto small = client.Prepare(plan_of(100));
  UOPD_ASSERT_OK(small);
  // Released with the plan: the quota is whole again.
  UOPD_ASSERT_OK(client.ReleasePlan(small->plan_id()));
  UOPD_EXPECT_OK(client.CreateBuffer("CPU", DType::FLOAT32, 240000));
}

// The compile worker tests give alice kernels large enough to take turns with, which would
// keep her compiles from the workers side by side.
constexpr const char* kNoTurnsForLargeKernels = "--large_kernel_nodes=1000000";

// Alice's `count` slow compiles (seconds of LLVM work each; distinct kernels, so none shares
// another's compile), each on a thread of its own from the moment this is made.
class AliceCompiles {
 public:
  AliceCompiles(const DaemonProcess& daemon, int count, int terms) : ended_(count, 0) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, &daemon, terms, i] {
        Client client(daemon.address(), WithToken(kAliceToken));
        UOPD_EXPECT_OK(client.Compile(CompileOf(testing::HeavyKernel(64, terms + i))));
        ended_[i] = SinceStart();
      });
    }
  }
  ~AliceCompiles() { Join(); }
  // Seconds since the compiles were sent.
  double SinceStart() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // Waits for them; when each ended, in seconds since they were sent, earliest first.
  std::vector<double> Join() {
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    std::vector<double> ended = ended_;
    std::sort(ended.begin(), ended.end());
    return ended;
  }

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::vector<double> ended_;
  std::vector<std::thread> threads_;
};

// The compile workers go to the caller with the fewest compiles running: alice's three slow
// compiles, queued for the one worker, do not hold carol's tiny one behind all of them (in the
// review, three slow compiles of one client made another's tiny compile miss its deadline).
TEST(Identity, CompileWorkersServeTheCallerWithTheFewestCompilesFirst) {
  const std::string dir = testing::TempDir("fair-compiles");
  DaemonProcess daemon(
      UOPD_DAEMON_PATH, dir + "/cache",
      {"--identities=" + IdentitiesFile(dir), "--compile_workers=1", kNoTurnsForLargeKernels,
       // The order of turns alone: a demoted compile would hand its turn back (tested apart).
       "--compile_demote_after=0"});
  ASSERT_TRUE(daemon.running());
  AliceCompiles alice(daemon, 3, 4000);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // one compiles, two wait
  Client carol(daemon.address(), WithToken(kCarolToken));
  UOPD_EXPECT_OK(carol.Compile(CompileOf(ScaleKernel(4, 10.0))));
  const double carol_done = alice.SinceStart();
  const std::vector<double> alice_done = alice.Join();
  EXPECT_LT(carol_done, alice_done[1])
      << "carol's tiny compile waited behind alice's queued ones: carol at " << carol_done
      << " s, alice at " << alice_done[0] << ", " << alice_done[1] << ", " << alice_done[2];
}

// With two workers, one caller's two slow compiles leave one worker for a caller that compiled
// lately: carol's tiny compile does not wait for one of alice's to end (in the attacker load
// test, honest compiles waited 3 s at the median behind an attacker's slow ones).
TEST(Identity, ACallerKeepsOneWorkerFreeForOthersWhoCompiledLately) {
  const std::string dir = testing::TempDir("reserve-compiles");
  DaemonProcess daemon(
      UOPD_DAEMON_PATH, dir + "/cache",
      {"--identities=" + IdentitiesFile(dir), "--compile_workers=2", kNoTurnsForLargeKernels});
  ASSERT_TRUE(daemon.running());
  Client carol(daemon.address(), WithToken(kCarolToken));
  UOPD_ASSERT_OK(carol.Compile(CompileOf(ScaleKernel(4, 11.0))));  // carol is a recent caller
  for (int i = 0; i < 500 && daemon.Metric("uopd_compile_workers_idle") != 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // both workers started
  }
  AliceCompiles alice(daemon, 2, 12000);
  // Once one of alice's reaches a worker (her two render side by side, so the other is there
  // too if it may be), carol compiles.
  for (int i = 0; i < 600 && daemon.Metric("uopd_compile_workers_idle") == 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double carol_sent = alice.SinceStart();
  UOPD_EXPECT_OK(carol.Compile(CompileOf(ScaleKernel(4, 12.0))));
  const double carol_took = alice.SinceStart() - carol_sent;
  const std::vector<double> alice_done = alice.Join();
  // Meaningful only if alice's were still compiling well after carol's was sent.
  ASSERT_GT(alice_done[0], carol_sent + 1.5) << "alice's compiles were too quick for this machine";
  EXPECT_LT(carol_took, 1.0) << "carol's tiny compile waited for one of alice's: it took "
                             << carol_took << " s, alice's ended at " << alice_done[0] << " and "
                             << alice_done[1] << " s";
}

// Kernels of more nodes than --large_kernel_nodes take turns, by identity: with one turn, carol's
// large kernel goes before alice's second (queued first), and carol's small one waits for
// neither.
TEST(Identity, LargeKernelsTakeTurnsByIdentityAndSmallOnesWaitForNone) {
  const std::string dir = testing::TempDir("large-kernel-turns");
  DaemonProcess daemon(UOPD_DAEMON_PATH, dir + "/cache",
                       {"--identities=" + IdentitiesFile(dir), "--compile_workers=2",
                        "--large_kernel_slots=1", "--large_kernel_nodes=2000"});
  ASSERT_TRUE(daemon.running());
  Client carol(daemon.address(), WithToken(kCarolToken));
  AliceCompiles alice(daemon, 2, 5000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // alice's are both in
  const double small_sent = alice.SinceStart();
  UOPD_EXPECT_OK(carol.Compile(CompileOf(ScaleKernel(4, 13.0))));
  const double small_took = alice.SinceStart() - small_sent;
  UOPD_EXPECT_OK(carol.Compile(CompileOf(testing::HeavyKernel(64, 600))));
  const double carol_large_done = alice.SinceStart();
  const std::vector<double> alice_done = alice.Join();
  ASSERT_GT(alice_done[0], small_sent + 1.0) << "alice's compiles were too quick for this machine";
  EXPECT_LT(small_took, 1.0) << "carol's small kernel waited for a turn";
  EXPECT_LT(carol_large_done, alice_done[1])
      << "carol's large kernel waited for both of alice's: done at " << carol_large_done
      << " s, alice's at " << alice_done[0] << " and " << alice_done[1] << " s";
}

TEST(Identity, ABufferAPlanKeepsUsingIsNotReclaimedAsIdle) {
  DaemonProcess daemon(UOPD_DAEMON_PATH, testing::TempDir("plan-idle"), {"--idle_ttl=1s"});
  ASSERT_TRUE(daemon.running());
  Client client(daemon.address());
  auto out = client.CreateBuffer("CPU", DType::FLOAT32, 4);
  auto in = client.CreateBuffer("CPU", DType::FLOAT32, 4, std::string(16, '\0'));
  UOPD_ASSERT_OK(out);
  UOPD_ASSERT_OK(in);
  v1::PrepareRequest prepare;
  prepare.add_buffers()->set_handle(*out);
  prepare.add_buffers()->set_handle(*in);
  *prepare.add_kernels()->mutable_ast() = ScaleKernel(4, 2.0);
  prepare.mutable_kernels(0)->add_buffers(0);
  prepare.mutable_kernels(0)->add_buffers(1);
  auto plan = client.Prepare(prepare);
  UOPD_ASSERT_OK(plan);
  v1::RunPlanRequest run;
  run.set_plan_id(plan->plan_id());
  // The plan writes `out` every 300 ms for 3 s; nothing touches the handles directly.
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    UOPD_ASSERT_OK(client.RunPlan(run));
  }
  UOPD_EXPECT_OK(client.ReadBuffer(*out));
  UOPD_EXPECT_OK(client.ReadBuffer(*in));
}

// A CA, a server certificate for localhost and 127.0.0.1, a client certificate for "node7"
// from the CA, and a client certificate from another CA, made with the openssl command.
struct Certificates {
  std::string dir;
  bool made = false;
  explicit Certificates(const std::string& at) : dir(at) {
    const std::string script = absl::StrCat(
        "cd '", dir, "' && exec >openssl.log 2>&1 && ",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=uopd-test-ca "
        "-keyout ca.key -out ca.pem && ",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
        "-out server.csr && ",
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext && ",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.ext -out server.pem && ",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=node7 -keyout client.key -out client.csr "
        "&& openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-out client.pem && ",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=node7 -keyout rogue.key "
        "-out rogue.pem");
    made = std::system(script.c_str()) == 0;
  }
  std::string Path(const std::string& name) const { return dir + "/" + name; }
};

TEST(Identity, TlsWithClientCertificatesNamesTheIdentity) {
  const std::string dir = testing::TempDir("tls");
  Certificates certs(dir);
  ASSERT_TRUE(certs.made) << ReadFile(certs.Path("openssl.log"));
  DaemonProcess daemon(
      UOPD_DAEMON_PATH, dir + "/cache",
      {"--tls_cert=" + certs.Path("server.pem"), "--tls_key=" + certs.Path("server.key"),
       "--tls_client_ca=" + certs.Path("ca.pem"),
       "--identities=" + IdentitiesFile(dir, "node7 compile,run x509:node7\n")});
  ASSERT_TRUE(daemon.running());

  ClientOptions tls;
  tls.tls_root_certs = ReadFile(certs.Path("ca.pem"));
  tls.tls_cert_chain = ReadFile(certs.Path("client.pem"));
  tls.tls_private_key = ReadFile(certs.Path("client.key"));
  tls.tls_server_name = "localhost";
  Client node7(daemon.address(), tls);
  auto handle = node7.CreateBuffer("CPU", DType::UINT8, 2, "ok");
  UOPD_ASSERT_OK(handle) << "the certificate's common name is identity node7";

  // A token over TLS is an identity of its own.
  ClientOptions alice_tls = tls;
  alice_tls.token = kAliceToken;
  Client alice(daemon.address(), alice_tls);
  EXPECT_TRUE(StatusIs(alice.ReadBuffer(*handle), absl::StatusCode::kNotFound));

  // Plaintext, TLS without a client certificate, and a certificate of another CA: no
  // connection at all.
  Client plaintext(daemon.address());
  EXPECT_TRUE(StatusIs(plaintext.ListDevices(), absl::StatusCode::kUnavailable));
  ClientOptions no_cert = tls;
  no_cert.tls_cert_chain.clear();
  no_cert.tls_private_key.clear();
  Client anonymous_tls(daemon.address(), no_cert);
  EXPECT_FALSE(anonymous_tls.ListDevices().ok());
  ClientOptions rogue = tls;
  rogue.tls_cert_chain = ReadFile(certs.Path("rogue.pem"));
  rogue.tls_private_key = ReadFile(certs.Path("rogue.key"));
  Client impostor(daemon.address(), rogue);
  EXPECT_FALSE(impostor.ListDevices().ok());
}

}  // namespace
}  // namespace uopd
