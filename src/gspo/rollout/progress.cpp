#include "gspo/rollout/progress.h"

#include <unistd.h>

#include <cstdio>

namespace gspo::rollout {

RolloutProgress::RolloutProgress(bool enabled, int64_t total)
    : enabled_(enabled && ::isatty(STDERR_FILENO) == 1), total_(total), start_(std::chrono::steady_clock::now()),
      last_(start_) {}

RolloutProgress::~RolloutProgress() {
  if (drawn_) {
    std::fprintf(stderr, "\r%70s\r", "");
    std::fflush(stderr);
  }
}

void RolloutProgress::update(int64_t finished, int64_t tokens) {
  if (!enabled_) return;
  tokens += base_tokens_;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < 2.0 || std::chrono::duration<double>(now - last_).count() < 0.25) return;
  last_ = now;
  drawn_ = true;
  std::fprintf(stderr, "\rrollout: %lld/%lld responses finished, %lld tokens, %.0f tok/s, %.0fs   ",
               static_cast<long long>(finished), static_cast<long long>(total_), static_cast<long long>(tokens),
               tokens / elapsed, elapsed);
  std::fflush(stderr);
}

}  // namespace gspo::rollout
