// A live line on stderr while a long rollout runs: responses finished of the total, tokens sampled per second. Drawn
// only when enabled and stderr is a terminal, first after 2 s and then at most 4 times a second; erased at the end.
#pragma once
#include <chrono>
#include <cstdint>

namespace gspo::rollout {

class RolloutProgress {
 public:
  RolloutProgress(bool enabled, int64_t total);
  ~RolloutProgress();  // erases the line if one was drawn
  bool active() const { return enabled_; }
  void update(int64_t finished, int64_t tokens);  // tokens of the current batch (see batch_done)
  void batch_done(int64_t tokens) { base_tokens_ += tokens; }  // static batches: the finished batch's tokens

 private:
  bool enabled_;
  bool drawn_ = false;
  int64_t total_;
  int64_t base_tokens_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace gspo::rollout
