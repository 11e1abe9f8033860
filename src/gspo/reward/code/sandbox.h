// Running untrusted programs (model-written code) with limits. Every run gets a fresh temporary directory that
// is removed afterwards. Isolation, strongest available first:
//   namespaces (running as root): new PID, network, IPC, UTS and mount namespaces; the program is PID 1's child
//     tree there, so when it ends or is killed every process it started dies with it (even after setsid);
//     it runs under a per-run unprivileged uid, with private tmpfs over /tmp, /var/tmp and /dev/shm and no
//     network at all;
//   bwrap (not root, bubblewrap usable): the same namespaces through bubblewrap, read-only root;
//   rlimits (fallback): its own process group, killed as a group.
// In every mode a root caller's program is dropped to a per-run unprivileged uid (so RLIMIT_NPROC binds), and:
// rlimits on CPU time, address space, processes, file size and open files, no core dumps, a
// wall-clock timeout, and a cap on captured output (exceeding it kills the program).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::reward {

struct SandboxLimits {
  double cpu_seconds = 5;        // RLIMIT_CPU
  double wall_seconds = 10;      // killed after this much real time
  int64_t memory_mb = 1024;      // RLIMIT_AS
  int64_t max_processes = 64;    // RLIMIT_NPROC (per sandbox user)
  int64_t file_size_mb = 16;     // RLIMIT_FSIZE
  int64_t output_bytes = 1 << 20;  // stdout + stderr captured; more kills the program
};

enum class SandboxMode { kNamespaces, kBwrap, kRlimits };
const char* sandbox_mode_name(SandboxMode m);
// The strongest mode usable here (probed once); GSPO_SANDBOX=namespaces|bwrap|rlimits forces one.
SandboxMode default_sandbox_mode();

struct RunResult {
  int exit_code = -1;          // when exited normally
  int term_signal = 0;         // when killed by a signal
  bool timed_out = false;      // wall-clock limit hit
  bool output_overflow = false;
  std::string out, err;
  double seconds = 0;
  bool ok() const { return exit_code == 0 && term_signal == 0 && !timed_out && !output_overflow; }
};

// Writes `files` (name -> content) into a fresh directory and runs `argv` there with `stdin_data`.
// Throws IoError only when the sandbox itself cannot be set up; program failures are in RunResult.
RunResult run_sandboxed(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& files,
                        const std::string& stdin_data, const SandboxLimits& limits,
                        SandboxMode mode = default_sandbox_mode());

}  // namespace gspo::reward
