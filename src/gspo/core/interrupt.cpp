#include "gspo/core/interrupt.h"

#include <atomic>
#include <csignal>

namespace gspo::interrupt {
namespace {
std::atomic<bool> g_flag{false};
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) {
  if (g_flag.exchange(true)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
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
