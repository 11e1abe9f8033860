#include "gspo/algo/advantage.h"

#include <torch/torch.h>

#include "gspo/core/error.h"

namespace gspo::algo {

Advantages group_advantages(const at::Tensor& rewards, int64_t G, const AdvantageOptions& opts) {
  TORCH_CHECK(rewards.dim() == 1 && rewards.size(0) % G == 0, "rewards must be [groups * G]");
  TORCH_CHECK(G >= 2, "group advantages need G >= 2");
  auto r = rewards.to(torch::kDouble).view({-1, G});
  auto mean = r.mean(1, true);
  Advantages out;
  out.zero_variance = (r.amax(1) == r.amin(1));
  out.num_zero_variance = out.zero_variance.sum().item<int64_t>();
  at::Tensor a;
  switch (opts.kind) {
    case AdvantageKind::kGroupNorm: {
      auto std = r.std(1, /*unbiased=*/opts.sample_std, /*keepdim=*/true);
      a = (r - mean) / (std + opts.eps);
      break;
    }
    case AdvantageKind::kNoStd:
      a = r - mean;
      break;
    case AdvantageKind::kLeaveOneOut:
      // r_i - (sum - r_i) / (G - 1) = G / (G - 1) * (r_i - mean)
      a = (r - (r.sum(1, true) - r) / static_cast<double>(G - 1));
      break;
  }
  // Exactly zero for zero-variance groups, whatever rounding left behind.
  a = a.masked_fill(out.zero_variance.unsqueeze(1), 0.0);
  out.values = a.reshape({-1}).to(torch::kFloat);
  return out;
}

}  // namespace gspo::algo
