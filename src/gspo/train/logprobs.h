// Log-probabilities of response tokens under a policy, from one full forward over prompt + response.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gspo::model { class Policy; }

namespace gspo::train {

struct TokenLogprobs {
  at::Tensor logprobs;  // [n, R] float32, differentiable when grad mode is on
  at::Tensor entropy;   // [n, R] float32, detached; undefined unless requested
};

// ids/mask: [n, P + R] in the rollout layout (left-padded prompt of P columns, right-padded response of R).
// Log-probs are taken at `temperature` (logits / temperature), the temperature the sampler used, computed as
// logit[target] - logsumexp(logits) so no [n, R, V] log-softmax tensor is kept.
TokenLogprobs response_logprobs(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask,
                                int64_t prompt_len, double temperature, bool want_entropy);

}  // namespace gspo::train
