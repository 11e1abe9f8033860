// Splitting a scored rollout into mini-batches (one optimizer step each) and micro-batches (one forward/backward
// each, gradients accumulated).
#pragma once
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "gspo/algo/mismatch.h"

namespace gspo::rollout { struct RolloutBatch; }

namespace gspo::train {

// A set of rollout rows with their columns trimmed to the longest response among them.
struct Micro {
  std::vector<int64_t> rows;  // indices into the RolloutBatch
  at::Tensor ids, mask;       // [n, P + r] int64
  at::Tensor resp_mask;       // [n, r] float32
  at::Tensor behaviour_lp;    // [n, r] float32
  at::Tensor advantages;      // [n] float32
  at::Tensor old_lp;          // [n, r] float32 log pi_old (recomputed or = behaviour_lp)
  at::Tensor ref_lp;          // [n, r] float32 log pi_ref, only with a KL term
  algo::IsWeights is;         // mismatch correction weights (algorithm.is_correction), filled with old_lp
  int64_t real_tokens = 0;    // prompt + response tokens (mask sum), for throughput
  void to(c10::Device device);  // moves every tensor (old_lp/ref_lp are filled on the model's device later)
};

Micro slice_rows(const rollout::RolloutBatch& b, const std::vector<int64_t>& rows, const at::Tensor& advantages);

// Shuffles `rows` with `gen` and cuts them into `num_minibatches` nearly equal mini-batches (fewer when there are
// fewer rows; sizes differ by at most one, the larger first).
std::vector<std::vector<int64_t>> plan_minibatches(const std::vector<int64_t>& rows, int64_t num_minibatches,
                                                   at::Generator& gen);

// Consecutive parts of at most `micro_size` rows (0 = one part holding every row); none for no rows.
std::vector<std::vector<int64_t>> split_micro(const std::vector<int64_t>& rows, int64_t micro_size);

// One optimizer step's share of the rollout on this rank.
struct MiniBatch {
  std::vector<Micro> micros;  // this rank's rows of the mini-batch, one forward/backward each
  int64_t global_rows = 0;    // rows of the mini-batch over all ranks (the loss weights' denominator)
};

}  // namespace gspo::train
