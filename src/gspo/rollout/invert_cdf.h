// Inverse-CDF draw over a batch of probability rows on the CPU, without the [N, V] float64 cumulative sum.
#pragma once
#include <ATen/core/Tensor.h>

namespace gspo::rollout {

// probs [N, V] float32 on the CPU (non-negative, each row with positive mass), uniforms [N] float64 in [0, 1) ->
// [N] int64: per row, the first token j where the running float64 sum of probs[0..j] exceeds uniforms * (the row's
// float64 total). The sums run over blocks of 8 (a fixed order, so the running sum ends exactly at the total) and
// element by element inside the block that crosses the target: in exact arithmetic this is the CDF inversion of
// sample_next, and in float64 it differs from a sequential cumsum only at draws within ~V * 1e-16 of a token edge.
// A token of probability zero is never chosen. A row whose target rounds up to its total takes its argmax (as the
// cumsum path does). O(N * V) reads, rows in parallel; one pass over a row plus the part before its token.
at::Tensor invert_cdf_cpu(const at::Tensor& probs, const at::Tensor& uniforms);

}  // namespace gspo::rollout
