#include "gspo/train/logprobs.h"

#include <torch/torch.h>

#include "gspo/model/policy.h"

namespace gspo::train {

TokenLogprobs response_logprobs(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                                double temperature, bool want_entropy) {
  const int64_t R = ids.size(1) - P;
  auto logits = policy.logits(ids, mask);               // [n, P + R, V]
  auto pred = logits.narrow(1, P - 1, R);               // position t predicts column t + 1
  if (temperature != 1.0) pred = pred / temperature;
  auto targets = ids.narrow(1, P, R).unsqueeze(-1);
  auto lse = pred.logsumexp(-1);
  TokenLogprobs out;
  out.logprobs = pred.gather(-1, targets).squeeze(-1) - lse;
  if (want_entropy) {
    torch::NoGradGuard g;
    auto p = (pred - lse.unsqueeze(-1)).exp();
    out.entropy = lse - (p * pred).sum(-1);
  }
  return out;
}

}  // namespace gspo::train
