#include "gspo/core/interrupt.h"

#include <atomic>
#include <unistd.h>

#include <csignal>

namespace gspo::interrupt {
namespace {
std::atomic<bool> g_flag{false};
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) {
  if (g_flag.exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  // write(2) is async-signal-safe; the logger is not.
  static const char kAck[] =
      "\ngspo: stop requested: finishing the current step, then a checkpoint (Ctrl-C again stops at once)\n";
  ssize_t ignored = ::write(STDERR_FILENO, kAck, sizeof kAck - 1);
  (void)ignored;
}
}  // namespace

Guard::Guard() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

Guard::~Guard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

bool requested() { return g_flag.load(); }
void request() { g_flag = true; }
void clear() { g_flag = false; }

}  // namespace gspo::interrupt
