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
      if (opts.scale == RewardScale::kNone) {
        a = r - mean;
      } else if (opts.scale == RewardScale::kBatch) {
        a = (r - mean) / (opts.batch_std + opts.eps);
      } else {
        auto std = r.std(1, /*unbiased=*/opts.sample_std, /*keepdim=*/true);
        a = (r - mean) / (std + opts.eps);
      }
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

double batch_std_of(const at::Tensor& rewards, bool sample_std) {
  if (rewards.numel() < 2) return 0.0;
  return rewards.to(torch::kDouble).std(/*unbiased=*/sample_std).item<double>();
}

Advantages component_advantages(const std::vector<at::Tensor>& components, const std::vector<double>& weights,
                                const at::Tensor& rewards, int64_t G, const AdvantageOptions& opts,
                                const std::vector<double>& batch_stds) {
  TORCH_CHECK(components.size() == weights.size() && !components.empty(), "one weight per reward component");
  auto out = group_advantages(rewards, G, opts);  // zero-variance groups of the summed reward
  auto sum = torch::zeros_like(out.values, torch::kDouble);
  for (size_t k = 0; k < components.size(); ++k) {
    auto per = opts;
    if (per.scale == RewardScale::kBatch) per.batch_std = batch_stds.at(k);
    sum += weights[k] * group_advantages(components[k], G, per).values.to(torch::kDouble);
  }
  out.values = sum.view({-1, G}).masked_fill(out.zero_variance.unsqueeze(1), 0.0).reshape({-1}).to(torch::kFloat);
  return out;
}

}  // namespace gspo::algo
