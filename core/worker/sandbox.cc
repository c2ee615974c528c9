#include "core/worker/sandbox.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uopd {
namespace {

// The kernel's ruleset attribute as of Landlock ABI 6; older kernels read a prefix of it.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};
struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

constexpr uint64_t kFsRead = (1ULL << 2) | (1ULL << 3);  // READ_FILE | READ_DIR
constexpr uint64_t kNetTcp = 1 | 2;                      // BIND_TCP | CONNECT_TCP (ABI 4)
constexpr uint64_t kScopes = 1 | 2;                      // ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)
constexpr int kRulePathBeneath = 1;

// Every filesystem right the kernel's ABI knows, so all of them are denied unless granted.
uint64_t FsRights(int abi) {
  uint64_t rights = (1ULL << 13) - 1;  // ABI 1: EXECUTE .. MAKE_SYM
  if (abi >= 2) rights |= 1ULL << 13;  // REFER
  if (abi >= 3) rights |= 1ULL << 14;  // TRUNCATE
  if (abi >= 5) rights |= 1ULL << 15;  // IOCTL_DEV
  return rights;
}

absl::Status ApplyLandlock(int abi, const SandboxPolicy& policy) {
  RulesetAttr attr;
  attr.handled_access_fs = FsRights(abi);
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = kNetTcp;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopes;
    size = sizeof(RulesetAttr);
  }
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) {
    return absl::InternalError(absl::StrCat("landlock_create_ruleset: ", std::strerror(errno)));
  }
  for (const std::string& dir : policy.read_only_dirs) {
    int fd = open(dir.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // a directory that is not there grants nothing
    PathBeneathAttr rule{kFsRead, fd};
    long added = syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0);
    close(fd);
    if (added != 0) {
      close(ruleset);
      return absl::InternalError(
          absl::StrCat("landlock_add_rule(", dir, "): ", std::strerror(errno)));
    }
  }
  long restricted = syscall(SYS_landlock_restrict_self, ruleset, 0);
  close(ruleset);
  if (restricted != 0) {
    return absl::InternalError(absl::StrCat("landlock_restrict_self: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status ApplySeccomp(bool deny_opens) {
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr) return absl::FailedPreconditionError("seccomp_init failed");
  int rc = seccomp_attr_set(filter, SCMP_FLTATR_CTL_TSYNC, 1);
  const int deny = SCMP_ACT_ERRNO(EPERM);
  // Nothing a compiler needs: new sockets, processes, programs, privileges, namespaces, mounts,
  // tracing, kernel interfaces, and changes to the filesystem.
  const int denied[] = {
      SCMP_SYS(socket),
      SCMP_SYS(socketpair),
      SCMP_SYS(connect),
      SCMP_SYS(bind),
      SCMP_SYS(listen),
      SCMP_SYS(accept),
      SCMP_SYS(accept4),
      SCMP_SYS(execve),
      SCMP_SYS(execveat),
      SCMP_SYS(fork),
      SCMP_SYS(vfork),
      SCMP_SYS(ptrace),
      SCMP_SYS(process_vm_readv),
      SCMP_SYS(process_vm_writev),
      SCMP_SYS(mount),
      SCMP_SYS(umount2),
      SCMP_SYS(pivot_root),
      SCMP_SYS(chroot),
      SCMP_SYS(setns),
      SCMP_SYS(unshare),
      SCMP_SYS(init_module),
      SCMP_SYS(finit_module),
      SCMP_SYS(delete_module),
      SCMP_SYS(kexec_load),
      SCMP_SYS(kexec_file_load),
      SCMP_SYS(reboot),
      SCMP_SYS(swapon),
      SCMP_SYS(swapoff),
      SCMP_SYS(bpf),
      SCMP_SYS(perf_event_open),
      SCMP_SYS(userfaultfd),
      SCMP_SYS(keyctl),
      SCMP_SYS(add_key),
      SCMP_SYS(request_key),
      SCMP_SYS(io_uring_setup),
      SCMP_SYS(open_by_handle_at),
      SCMP_SYS(name_to_handle_at),
      SCMP_SYS(personality),
      SCMP_SYS(tkill),
      SCMP_SYS(unlink),
      SCMP_SYS(unlinkat),
      SCMP_SYS(rename),
      SCMP_SYS(renameat),
      SCMP_SYS(renameat2),
      SCMP_SYS(mkdir),
      SCMP_SYS(mkdirat),
      SCMP_SYS(rmdir),
      SCMP_SYS(link),
      SCMP_SYS(linkat),
      SCMP_SYS(symlink),
      SCMP_SYS(symlinkat),
      SCMP_SYS(chmod),
      SCMP_SYS(fchmod),
      SCMP_SYS(fchmodat),
      SCMP_SYS(chown),
      SCMP_SYS(fchown),
      SCMP_SYS(fchownat),
      SCMP_SYS(lchown),
      SCMP_SYS(truncate),
      SCMP_SYS(mknod),
      SCMP_SYS(mknodat),
      SCMP_SYS(setuid),
      SCMP_SYS(setgid),
      SCMP_SYS(setreuid),
      SCMP_SYS(setregid),
      SCMP_SYS(setresuid),
      SCMP_SYS(setresgid),
      SCMP_SYS(setgroups),
      SCMP_SYS(sethostname),
      SCMP_SYS(setdomainname),
      SCMP_SYS(settimeofday),
      SCMP_SYS(clock_settime),
      SCMP_SYS(acct),
      SCMP_SYS(quotactl),
      SCMP_SYS(iopl),
      SCMP_SYS(ioperm),
      SCMP_SYS(memfd_create),
  };
  for (int syscall_number : denied) {
    rc = rc < 0 ? rc : seccomp_rule_add(filter, deny, syscall_number, 0);
  }
  // Threads only: a clone without CLONE_THREAD makes a process. clone3 hides its flags in
  // memory a filter cannot read; ENOSYS makes the C library fall back to clone.
  if (rc >= 0) {
    rc = seccomp_rule_add(filter, deny, SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  }
  if (rc >= 0) rc = seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // Signals to itself only (abort() raises SIGABRT with tgkill).
  const pid_t self = getpid();
  if (rc >= 0) {
    rc = seccomp_rule_add(filter, deny, SCMP_SYS(kill), 1,
                          SCMP_A0(SCMP_CMP_NE, static_cast<scmp_datum_t>(self)));
  }
  if (rc >= 0) {
    rc = seccomp_rule_add(filter, deny, SCMP_SYS(tgkill), 1,
                          SCMP_A0(SCMP_CMP_NE, static_cast<scmp_datum_t>(self)));
  }
  if (deny_opens) {
    for (int call : {SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(creat)}) {
      rc = rc < 0 ? rc : seccomp_rule_add(filter, SCMP_ACT_ERRNO(EACCES), call, 0);
    }
  }
  if (rc >= 0) rc = seccomp_load(filter);
  seccomp_release(filter);
  if (rc < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot install the seccomp filter: ", std::strerror(-rc)));
  }
  return absl::OkStatus();
}

absl::Status SetLimit(int resource, rlim_t value, const char* name) {
  rlimit limit;
  getrlimit(resource, &limit);
  limit.rlim_cur = value;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < value) limit.rlim_cur = limit.rlim_max;
  limit.rlim_max = limit.rlim_cur;
  if (setrlimit(resource, &limit) != 0) {
    return absl::InternalError(absl::StrCat("setrlimit(", name, "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

int LandlockAbi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

std::string SandboxReport::Describe() const {
  std::vector<std::string> parts;
  if (landlock_abi > 0) {
    std::vector<std::string> scope = {"filesystem"};
    if (landlock_abi >= 4) scope.push_back("tcp");
    if (landlock_abi >= 6) scope.push_back("signals");
    parts.push_back(
        absl::StrCat("landlock abi ", landlock_abi, " (", absl::StrJoin(scope, ", "), ")"));
  } else {
    parts.push_back("no landlock (file opens denied by seccomp)");
  }
  if (seccomp) parts.push_back("seccomp");
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<SandboxReport> EnterSandbox(const SandboxPolicy& policy) {
  SandboxReport report;
  if (absl::Status s = SetLimit(RLIMIT_CORE, 0, "RLIMIT_CORE"); !s.ok()) return s;
  if (absl::Status s = SetLimit(RLIMIT_AS, static_cast<rlim_t>(policy.memory_bytes), "RLIMIT_AS");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = SetLimit(RLIMIT_NOFILE, policy.max_open_files, "RLIMIT_NOFILE"); !s.ok()) {
    return s;
  }
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("PR_SET_NO_NEW_PRIVS: ", std::strerror(errno)));
  }
  report.landlock_abi = LandlockAbi();
  if (report.landlock_abi > 0) {
    if (absl::Status s = ApplyLandlock(report.landlock_abi, policy); !s.ok()) return s;
  }
  if (absl::Status s = ApplySeccomp(/*deny_opens=*/report.landlock_abi == 0); !s.ok()) return s;
  report.seccomp = true;
  return report;
}

void LimitCpuSecondsFromNow(int64_t seconds) {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  rlimit limit;
  getrlimit(RLIMIT_CPU, &limit);
  limit.rlim_cur = static_cast<rlim_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + seconds);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_cur > limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
  }
  setrlimit(RLIMIT_CPU, &limit);
}

}  // namespace uopd
