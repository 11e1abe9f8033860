// The synthetic rollout batch the update benchmarks train on: n rows, prompt P, responses of 1..R tokens
// (row i: 1 + 37 i mod R), deterministic ids; every row finished by the length cap.
#pragma once
#include <torch/torch.h>

#include "gspo/rollout/sampler.h"

namespace gspo::bench {

inline rollout::RolloutBatch synthetic_batch(int64_t n, int64_t P, int64_t R) {
  rollout::RolloutBatch b;
  b.prompt_len = P;
  b.input_ids = torch::zeros({n, P + R}, torch::kLong);
  b.attention_mask = torch::zeros({n, P + R}, torch::kLong);
  b.response_mask = torch::zeros({n, R});
  b.behaviour_logprobs = torch::zeros({n, R});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = 1 + (i * 37) % R;
    for (int64_t t = 0; t < P + len; ++t) {
      b.input_ids[i][t] = (i * 7 + t * 3) % 256;
      b.attention_mask[i][t] = 1;
    }
    b.response_mask[i].narrow(0, 0, len).fill_(1);
    b.response_lengths.push_back(len);
    b.finish.push_back(rollout::Finish::kLength);
  }
  return b;
}

}  // namespace gspo::bench
