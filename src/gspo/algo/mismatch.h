// Training/inference mismatch (docs/algorithm.md, "Mismatch correction"): the sampler's log-probs of the tokens it
// drew differ from the trainer's at the same weights (other kernels and batch shapes, bf16 sampling against float32
// training). With pi_train the trainer's likelihood at the step-start weights (the recomputed pi_old) and pi_sampler
// the sampler's, the importance weight of a sampled token is w_t = pi_train / pi_sampler. Corrections:
//   tis  truncated importance sampling: each term is multiplied by min(w, cap)
//   mis  masked importance sampling: terms with w outside [floor, cap] are rejected (left out of the loss and of
//        their sequence's token average), the others multiplied by w
// at token level (w_t), or at sequence level with w_i = exp(mean_t log w_t) (sequence_geometric, length-normalised
// like GSPO's ratio) or w_i = exp(sum_t log w_t) (sequence_product, the sequence's full likelihood ratio).
// All weights are constants for the gradient.
#pragma once
#include <ATen/core/Tensor.h>

#include "gspo/config/choices.h"

namespace gspo::algo {

using config::IsCorrection;  // algorithm.is_correction
using config::IsLevel;       // algorithm.is_level

struct IsOptions {
  IsCorrection mode = IsCorrection::kNone;
  IsLevel level = IsLevel::kToken;
  double cap = 2.0;    // upper threshold of w (tis: truncation; mis: rejection above)
  double floor = 0.5;  // mis: rejection below
};

struct IsWeights {
  at::Tensor weight;  // [N, T] (token level) or [N] (sequence levels) float32: the factor on each term, 0 if rejected
  at::Tensor keep;    // same shape, bool: false where mis rejected the term (tis: all true)
  bool token_level() const { return weight.dim() == 2; }
};

// train_lp, sampler_lp: [N, T] log-probs of the response tokens; mask [N, T] 1 on response tokens. Undefined
// tensors for IsCorrection::kNone.
IsWeights importance_weights(const at::Tensor& train_lp, const at::Tensor& sampler_lp, const at::Tensor& mask,
                             const IsOptions& opts);

// What a step logs about the mismatch (sums and extrema, so micro-batches and ranks can be combined).
struct MismatchStats {
  double tokens = 0, sequences = 0;
  double diff_sum = 0;       // sum over tokens of log pi_train - log pi_sampler
  double diff_abs_max = 0;   // largest |log pi_train - log pi_sampler|
  double weight_sum = 0;     // sum of w at the configured level (token: over tokens; sequence: over sequences)
  double weight_count = 0;   // how many w were summed
  double weight_min = 1e300, weight_max = -1e300;
  double truncated = 0;      // w above cap (tis: truncated; mis: rejected above)
  double rejected = 0;       // mis: w outside [floor, cap]
  void add(const MismatchStats& o);
};

MismatchStats mismatch_stats(const at::Tensor& train_lp, const at::Tensor& sampler_lp, const at::Tensor& mask,
                             const IsOptions& opts);

}  // namespace gspo::algo
