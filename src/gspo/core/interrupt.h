// Ctrl-C / SIGTERM handling for long runs: the first signal sets a flag the trainer polls between steps (it
// finishes the step, writes a checkpoint and stops); a second signal ends the process at once (the last
// checkpoint stays intact because checkpoints are written atomically).
#pragma once

namespace gspo::interrupt {

// Installs the handlers (idempotent). The guard restores the previous handlers when destroyed.
class Guard {
 public:
  Guard();
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
};

bool requested();
// For tests: pretend a signal arrived.
void request();
void clear();

}  // namespace gspo::interrupt
