// Group-relative advantages (../shared/docs/gspo-algorithm.md section 1, beside a development checkout;
// docs/algorithm.md, "Advantages"): one scalar per response, shared by its tokens.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "gspo/config/choices.h"

namespace gspo::algo {

using config::AdvantageKind;  // algorithm.advantage
using config::RewardScale;    // algorithm.scale_rewards

struct AdvantageOptions {
  AdvantageKind kind = AdvantageKind::kGroupNorm;
  bool sample_std = false;  // false: population std (divide by G); true: sample std (divide by G - 1)
  double eps = 1e-6;        // added to the std
  RewardScale scale = RewardScale::kGroup;  // group_norm: the group's std, the batch's (batch_std), or none
  double batch_std = 0;     // RewardScale::kBatch: std of every reward of the batch (all ranks), batch_std_of
};

// The std of a whole batch's rewards (population, or sample with sample_std), for RewardScale::kBatch.
double batch_std_of(const at::Tensor& rewards, bool sample_std);


struct Advantages {
  at::Tensor values;                // [N] float32, N = groups * G, group-major
  at::Tensor zero_variance;         // [groups] bool: every reward of the group equal (advantages all 0)
  int64_t num_zero_variance = 0;
};

// rewards: [N] with N a multiple of group_size, rows of one group adjacent.
Advantages group_advantages(const at::Tensor& rewards, int64_t group_size, const AdvantageOptions& opts);

// sum_k weights[k] * advantages of components[k] ([N] each): algorithm.component_norm before_sum. Zero-variance
// groups are those of the summed reward `rewards`, as for after_sum. `batch_stds[k]`: component k's batch std
// (RewardScale::kBatch only; over every rank's rows).
Advantages component_advantages(const std::vector<at::Tensor>& components, const std::vector<double>& weights,
                                const at::Tensor& rewards, int64_t group_size, const AdvantageOptions& opts,
                                const std::vector<double>& batch_stds = {});

}  // namespace gspo::algo
