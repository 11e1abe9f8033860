// Private to step.cpp / step_metrics.cpp: what one rollout step measured on this rank, before the ranks' figures
// are combined into the step's metrics line.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "gspo/algo/loss.h"

namespace gspo::train {

struct UpdateStats {
  algo::LossStats loss;
  double loss_sum = 0;       // sum over sequences of the per-sequence loss (policy + KL)
  double entropy_sum = 0;    // over response tokens
  double grad_norm_sum = 0, grad_norm_max = 0;
  int64_t updates = 0, skipped = 0;
  int64_t train_tokens = 0;
  double lr = 0;
  double first_mb_ratio_dev = 0;  // max |s_i - 1| in the first mini-batch
};

// Per-row figures of this rank's rollout rows, in global row order once gathered.
struct StepRecord {
  std::vector<double> rewards, correct, advantages, response_lengths, truncated;
  int64_t prompts = 0;            // this rank's prompts
  int64_t zero_variance = 0;      // of them, groups with equal rewards
  int64_t update_rows = 0;        // rows used by the update on all ranks
  int64_t generated_tokens = 0;
  UpdateStats update;
  double t_sample = 0, t_reward = 0, t_old = 0, t_update = 0;
};

}  // namespace gspo::train
