// Log-probs and entropy of chosen tokens straight from final hidden states through the LM head, a chunk of tokens
// at a time, forward and backward: the [N, V] logits never exist whole (the head's memory is O(chunk x V)).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gspo::train {

struct HeadLogprobs {
  at::Tensor logprobs;  // [N] (or [N, K]) float32, differentiable with respect to hidden, weight and bias
  at::Tensor entropy;   // [N] float32, no gradient
};

// hidden [N, H] (after the final norm), weight [V, H], bias [V] or undefined, targets [N] (or [N, K]) int64 ->
// log_softmax((hidden @ weight^T + bias) / temperature)[target] and the entropy of that softmax, in float32 whatever
// the weights' dtype (the product runs in the weights' dtype, as the model's own head does). `chunk_tokens` rows
// of hidden per chunk (0 = all at once): forward keeps hidden, weight and the [N] log-sum-exp; backward recomputes
// each chunk's logits. Peak extra memory about chunk_tokens x V x 8 bytes (float32 logits and their gradient), plus a
// float32 [V, H] gradient accumulator when the weights are 16-bit.
HeadLogprobs head_logprobs(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                           const at::Tensor& targets, double temperature, int64_t chunk_tokens);

}  // namespace gspo::train
