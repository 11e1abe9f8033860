#include "gspo/reward/code/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <atomic>
#include <mutex>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/core/log.h"

namespace gspo::reward {
namespace {

// Programs never run as root: each run gets its own unprivileged uid/gid from this range, so RLIMIT_NPROC (which
// counts per uid) binds, and a fork bomb in one sandbox cannot starve programs in parallel sandboxes.
// The uid mixes this process's pid with a per-process counter, so concurrent gspo processes (parallel trainers,
// parallel test processes) do not share uids either.
constexpr uid_t kSandboxUidBase = 200000;
std::atomic<uint32_t> g_next_uid{0};

uid_t next_sandbox_uid() {
  const uint32_t slot = (static_cast<uint32_t>(getpid()) % 4096u) * 64u + (g_next_uid++ % 64u);
  return kSandboxUidBase + slot;
}

// Drops to `uid` when running as root (no-op otherwise). Only async-signal-safe calls: used after fork().
bool drop_privileges(uid_t uid) {
  if (geteuid() != 0) return true;
  return setgroups(0, nullptr) == 0 && setgid(uid) == 0 && setuid(uid) == 0;
}

std::string which(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(full.c_str(), X_OK) == 0) return full;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

void set_limits(const SandboxLimits& l) {
  auto lim = [](int res, rlim_t v) {
    struct rlimit r{v, v};
    setrlimit(res, &r);
  };
  {  // soft limit delivers SIGXCPU (reported as a time limit), the hard one a second later SIGKILL
    const rlim_t cpu = static_cast<rlim_t>(std::max(1.0, l.cpu_seconds + 0.999));
    struct rlimit r{cpu, cpu + 1};
    setrlimit(RLIMIT_CPU, &r);
  }
  lim(RLIMIT_AS, static_cast<rlim_t>(l.memory_mb) << 20);
  lim(RLIMIT_NPROC, static_cast<rlim_t>(l.max_processes));
  lim(RLIMIT_FSIZE, static_cast<rlim_t>(l.file_size_mb) << 20);
  lim(RLIMIT_NOFILE, 256);
  lim(RLIMIT_CORE, 0);
}

// Runs as PID 1 of fresh namespaces: private mounts and tmpfs scratch, limits, drops to nobody, then runs the
// program as its child (so the program gets ordinary signal semantics, which PID 1 lacks) and reports the
// program's wait status on `status_fd`. Never returns; when it exits the kernel kills the whole namespace.
[[noreturn]] void namespace_init(const char* workdir, const char* prog, char* const* argv, const SandboxLimits& l,
                                 uid_t uid, int status_fd) {
  mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  if (chdir(workdir) != 0) _exit(126);
  // Cover the shared scratch directories with private tmpfs, then bind the working directory (still reachable
  // through the cwd) back at its own path inside the new /tmp.
  for (const char* dir : {"/tmp", "/var/tmp", "/dev/shm"}) mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m");
  if (mkdir(workdir, 0700) != 0 || mount("/proc/self/cwd", workdir, nullptr, MS_BIND, nullptr) != 0) _exit(126);
  if (chdir(workdir) != 0) _exit(126);
  set_limits(l);
  if (!drop_privileges(uid)) _exit(126);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  pid_t child = _Fork();  // not fork(): see child_main
  if (child < 0) _exit(125);
  if (child == 0) {
    close(status_fd);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execv(prog, argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (write(status_fd, &status, sizeof status) != sizeof status) _exit(125);
  _exit(0);
}

// In namespace mode the child stays outside and waits for the namespace's PID 1, which it reports on `info_fd`:
// the parent kills that PID on a timeout, and this wait returns only once the kernel has killed and reaped every
// other process of the namespace, so nothing outlives a run.
[[noreturn]] void child_main(SandboxMode mode, const char* workdir, const char* prog, char* const* argv,
                             const SandboxLimits& l, uid_t uid, int in, int out, int err, int info_fd) {
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // All four pipe ends are >= 3, and `in` may be 3 itself: move the std streams first.
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  if (info_fd != 3) dup2(info_fd, 3);
  for (int fd = 4; fd < 1024; ++fd) close(fd);
  if (mode == SandboxMode::kNamespaces) {
    if (unshare(CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS) != 0) _exit(125);
    int st[2];
    if (pipe(st) != 0) _exit(125);
    // _Fork, not fork: fork() runs the pthread_atfork handlers of the libraries (Gloo, LibTorch) in the child, and a
    // handler that closes and reopens its own descriptor by number would now hit one of ours (the loop above closed
    // theirs and our pipe took the number): the status pipe became an eventfd, and the namespace sandbox failed its
    // probe in every process that had opened a process group, falling back to rlimits without network isolation.
    pid_t init = _Fork();
    if (init < 0) _exit(125);
    if (init == 0) {
      close(3);
      close(st[0]);
      namespace_init(workdir, prog, argv, l, uid, st[1]);
    }
    close(st[1]);
    if (write(3, &init, sizeof init) != sizeof init) _exit(125);
    close(3);
    int init_status = 0, status = 0;
    while (waitpid(init, &init_status, 0) < 0 && errno == EINTR) {
    }
    if (read(st[0], &status, sizeof status) != sizeof status) _exit(125);  // init was killed: timeout
    if (WIFSIGNALED(status)) {
      signal(WTERMSIG(status), SIG_DFL);
      kill(getpid(), WTERMSIG(status));
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
  }
  close(3);
  if (chdir(workdir) != 0) _exit(126);
  set_limits(l);
  if (!drop_privileges(uid)) _exit(126);
  execv(prog, argv);
  _exit(127);
}

bool probe(const std::vector<std::string>& argv, SandboxMode mode) {
  try {
    SandboxLimits l;
    l.wall_seconds = 5;
    return run_sandboxed(argv, {}, "", l, mode).ok();
  } catch (const Error&) {
    return false;
  }
}

void write_files(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files, bool chown_to,
                 uid_t uid) {
  for (const auto& [name, content] : files) {
    const std::string path = dir + "/" + name;
    std::ofstream f(path, std::ios::binary);
    if (!f) throw IoError("sandbox: cannot write '" + path + "'");
    f << content;
    f.close();
    if (chown_to && chown(path.c_str(), uid, uid) != 0) throw IoError("sandbox: cannot chown '" + path + "'");
  }
}

// Pumps stdin and collects stdout/stderr until the child closes them, the deadline passes or output overflows.
void pump(RunResult& r, pid_t pid, pid_t init, int in_fd, int out_fd, int err_fd, const std::string& input, const SandboxLimits& l) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(l.wall_seconds);
  size_t written = 0;
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    struct pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out_fd, POLLIN, 0};
    if (err_open) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (poll(fds, n, static_cast<int>(std::min<int64_t>(left.count(), 100))) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == input.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        (fds[i].fd == out_fd ? out_open : err_open) = false;
        continue;
      }
      std::string& dst = fds[i].fd == out_fd ? r.out : r.err;
      dst.append(buf, static_cast<size_t>(got));
      if (static_cast<int64_t>(r.out.size() + r.err.size()) > l.output_bytes) {
        r.output_overflow = true;
        out_open = err_open = false;
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  if (r.timed_out || r.output_overflow) {
    if (init > 0) kill(init, SIGKILL);  // the namespace dies with its PID 1; the child then reaps and exits
    else kill(-pid, SIGKILL);
  }
}

}  // namespace

const char* sandbox_mode_name(SandboxMode m) {
  switch (m) {
    case SandboxMode::kNamespaces: return "namespaces";
    case SandboxMode::kBwrap: return "bwrap";
    case SandboxMode::kRlimits: return "rlimits";
  }
  return "?";
}

SandboxMode default_sandbox_mode() {
  static std::once_flag once;
  static SandboxMode mode = SandboxMode::kRlimits;
  std::call_once(once, [] {
    const char* forced = std::getenv("GSPO_SANDBOX");
    if (forced && *forced) {
      const std::string f = forced;
      if (f == "namespaces") mode = SandboxMode::kNamespaces;
      else if (f == "bwrap") mode = SandboxMode::kBwrap;
      else if (f == "rlimits") mode = SandboxMode::kRlimits;
      else throw ConfigError("GSPO_SANDBOX must be namespaces, bwrap or rlimits (got '" + f + "')");
      return;
    }
    if (geteuid() == 0 && probe({"/bin/true"}, SandboxMode::kNamespaces)) mode = SandboxMode::kNamespaces;
    else if (!which("bwrap").empty() && probe({"/bin/true"}, SandboxMode::kBwrap)) mode = SandboxMode::kBwrap;
    else
      log::warn("sandbox: neither Linux namespaces (as root) nor bwrap works here, so programs run under rlimits "
                "alone: no network, filesystem or process isolation (GSPO_SANDBOX=rlimits says that is intended)");
  });
  return mode;
}

namespace {
// Sandbox directories of processes that no longer exist (killed, or a second Ctrl-C) are removed once, before this
// process makes its first: /tmp/gspo-sbx-PID-XXXXXX, and only ours (same owner).
void remove_stale_sandbox_dirs() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& name : core::list_dir("/tmp")) {
      if (name.rfind("gspo-sbx-", 0) != 0) continue;
      const auto end = name.find('-', 9);
      const std::string pid = name.substr(9, end == std::string::npos ? std::string::npos : end - 9);
      struct stat st {};
      const std::string path = "/tmp/" + name;
      if (::stat(path.c_str(), &st) != 0 || (geteuid() != 0 && st.st_uid != geteuid())) continue;
      if (core::process_gone(pid)) core::remove_all(path);
    }
  });
}
}  // namespace

RunResult run_sandboxed(const std::vector<std::string>& argv_in, const std::vector<std::pair<std::string, std::string>>& files,
                        const std::string& stdin_data, const SandboxLimits& limits, SandboxMode mode) {
  const auto t0 = std::chrono::steady_clock::now();
  remove_stale_sandbox_dirs();
  std::string tmpl = "/tmp/gspo-sbx-" + std::to_string(getpid()) + "-XXXXXX";  // pid: whose sandbox it is
  if (!mkdtemp(tmpl.data())) throw IoError(std::string("sandbox: cannot create a temporary directory: ") + std::strerror(errno));
  const std::string dir = tmpl;
  struct Cleanup {
    std::string d;
    ~Cleanup() { core::remove_all(d); }
  } cleanup{dir};
  const uid_t uid = next_sandbox_uid();
  const bool as_root = geteuid() == 0;
  write_files(dir, files, as_root, uid);
  if (as_root && chown(dir.c_str(), uid, uid) != 0) throw IoError("sandbox: cannot chown '" + dir + "'");

  std::vector<std::string> argv = argv_in;
  if (argv.empty()) throw IoError("sandbox: empty command");
  std::string prog = which(argv[0]);
  if (prog.empty()) throw IoError("sandbox: '" + argv[0] + "' not found on PATH");
  argv[0] = prog;
  if (mode == SandboxMode::kBwrap) {
    std::vector<std::string> wrap = {which("bwrap"), "--unshare-all", "--die-with-parent", "--new-session",
                                     "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", dir, dir,
                                     "--chdir", dir, "--"};
    if (wrap[0].empty()) throw IoError("sandbox: bwrap not found");
    argv.insert(argv.begin(), wrap.begin(), wrap.end());
    prog = argv[0];
  }
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  int in[2], out[2], err[2], info[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(info, O_CLOEXEC))
    throw IoError(std::string("sandbox: pipe: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) throw IoError(std::string("sandbox: fork: ") + std::strerror(errno));
  if (pid == 0) child_main(mode, dir.c_str(), prog.c_str(), cargv.data(), limits, uid, in[0], out[1], err[1], info[1]);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  close(info[1]);
  pid_t init = 0;
  if (mode == SandboxMode::kNamespaces && read(info[0], &init, sizeof init) != sizeof init) init = 0;
  close(info[0]);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);  // a program that exits without reading stdin must not kill us

  RunResult r;
  pump(r, pid, init, in[1], out[0], err[0], stdin_data, limits);
  close(out[0]);
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // rlimits mode: anything left in its process group
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace gspo::reward
