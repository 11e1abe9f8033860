// Group-relative advantages (gspo-algorithm.md section 1): one scalar per response, shared by its tokens.
#pragma once
#include <ATen/core/Tensor.h>

#include "gspo/config/choices.h"

namespace gspo::algo {

using config::AdvantageKind;  // algorithm.advantage

struct AdvantageOptions {
  AdvantageKind kind = AdvantageKind::kGroupNorm;
  bool sample_std = false;  // false: population std (divide by G); true: sample std (divide by G - 1)
  double eps = 1e-6;        // added to the std
};

struct Advantages {
  at::Tensor values;                // [N] float32, N = groups * G, group-major
  at::Tensor zero_variance;         // [groups] bool: every reward of the group equal (advantages all 0)
  int64_t num_zero_variance = 0;
};

// rewards: [N] with N a multiple of group_size, rows of one group adjacent.
Advantages group_advantages(const at::Tensor& rewards, int64_t group_size, const AdvantageOptions& opts);

}  // namespace gspo::algo
