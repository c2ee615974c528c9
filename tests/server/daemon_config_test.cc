// The daemon's configuration is read from its flags once and checked before anything starts.
#include "server/daemon_config.h"

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

ABSL_DECLARE_FLAG(std::string, listen);
ABSL_DECLARE_FLAG(std::string, local_socket);
ABSL_DECLARE_FLAG(std::string, unix_socket_mode);
ABSL_DECLARE_FLAG(std::string, optimization);
ABSL_DECLARE_FLAG(std::string, log_level);
ABSL_DECLARE_FLAG(std::string, identities);
ABSL_DECLARE_FLAG(int32_t, compile_workers);
ABSL_DECLARE_FLAG(int32_t, threads);

namespace uopd {
namespace {

class DaemonConfigTest : public ::testing::Test {
 private:
  absl::FlagSaver saver_;  // every test starts from the defaults
};

TEST_F(DaemonConfigTest, DefaultsAreResolvedForThisMachine) {
  absl::SetFlag(&FLAGS_local_socket, "");
  auto config = DaemonConfigFromFlags();
  UOPD_ASSERT_OK(config);
  EXPECT_GE(config->threads, 1);
  EXPECT_GE(config->compile.workers, 1);
  EXPECT_LE(config->compile.workers, 8);
  EXPECT_GE(config->compile.memory_bytes, int64_t{1} << 30);
  EXPECT_LE(config->compile.memory_bytes, int64_t{8} << 30);
  EXPECT_GE(config->compile.large_kernel_slots, 1);
  EXPECT_FALSE(config->cache.dir.empty());
  EXPECT_EQ(config->security.anonymous_rights, "compile,run");
  EXPECT_EQ(config->optimization, OptMode::kHeuristic);
  EXPECT_EQ(config->network.local_socket_path, "");
}

TEST_F(DaemonConfigTest, GivenValuesAreKeptAndIdentitiesTakeAnonymousRightsAway) {
  absl::SetFlag(&FLAGS_compile_workers, 3);
  absl::SetFlag(&FLAGS_threads, 5);
  absl::SetFlag(&FLAGS_identities, "/etc/uopd/identities");
  absl::SetFlag(&FLAGS_optimization, "search");
  absl::SetFlag(&FLAGS_local_socket, "");
  auto config = DaemonConfigFromFlags();
  UOPD_ASSERT_OK(config);
  EXPECT_EQ(config->compile.workers, 3);
  EXPECT_EQ(config->threads, 5);
  EXPECT_EQ(config->security.anonymous_rights, "none");
  EXPECT_EQ(config->optimization, OptMode::kSearch);
}

TEST_F(DaemonConfigTest, AUnixSocketBesideAUnixListenerTakesTheSocketMode) {
  absl::SetFlag(&FLAGS_listen, "unix:///run/uopd/uopd.sock");
  absl::SetFlag(&FLAGS_unix_socket_mode, "0660");
  auto config = DaemonConfigFromFlags();
  UOPD_ASSERT_OK(config);
  EXPECT_EQ(config->network.socket_mode, 0660);
  EXPECT_EQ(config->network.local_socket_path, "/run/uopd/uopd.sock.local");
}

TEST_F(DaemonConfigTest, BadValuesAreRefusedNamingTheirFlag) {
  absl::SetFlag(&FLAGS_listen, "unix:/tmp/uopd.sock");
  absl::SetFlag(&FLAGS_unix_socket_mode, "999");
  auto mode = DaemonConfigFromFlags();
  EXPECT_TRUE(absl::IsInvalidArgument(mode.status())) << mode.status();
  EXPECT_NE(mode.status().message().find("--unix_socket_mode"), std::string::npos);

  absl::SetFlag(&FLAGS_unix_socket_mode, "0600");
  absl::SetFlag(&FLAGS_optimization, "fastest");
  auto optimization = DaemonConfigFromFlags();
  EXPECT_TRUE(absl::IsInvalidArgument(optimization.status()));
  EXPECT_NE(optimization.status().message().find("--optimization"), std::string::npos);
  EXPECT_NE(optimization.status().message().find("fastest"), std::string::npos);

  absl::SetFlag(&FLAGS_optimization, "none");
  absl::SetFlag(&FLAGS_log_level, "loud");
  auto level = DaemonConfigFromFlags();
  EXPECT_TRUE(absl::IsInvalidArgument(level.status()));
  EXPECT_NE(level.status().message().find("--log_level"), std::string::npos);
}

}  // namespace
}  // namespace uopd
