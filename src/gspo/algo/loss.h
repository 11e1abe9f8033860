// Policy losses on plain tensors (../shared/docs/gspo-algorithm.md sections 2-4, beside a development checkout;
// docs/algorithm.md, "Policy losses"): GSPO, GSPO-token and GRPO, with optional KL to a reference policy. No model
// involved, so the numbers can be checked against any implementation.
//
// Aggregation, as each definition says: per-sequence terms, averaged over the sequences of the batch with equal
// weight (never weighted by token counts). GSPO's per-sequence term uses the length-normalised sequence ratio;
// GSPO-token and GRPO average their per-token terms within each sequence first.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "gspo/algo/mismatch.h"
#include "gspo/config/choices.h"

namespace gspo::algo {

using config::KlEstimator;  // algorithm.kl_estimator
using config::LossKind;     // algorithm.loss

struct LossOptions {
  LossKind kind = LossKind::kGspo;
  double clip_low = config::default_clip(LossKind::kGspo).low;    // eps_low: ratio floor 1 - eps_low
  double clip_high = config::default_clip(LossKind::kGspo).high;  // eps_high: ratio ceiling 1 + eps_high
  double log_ratio_clamp = 10.0;  // log-ratios are clamped from above at this before exp(); 0 disables
  double kl_coef = 0.0;           // beta; 0 = no KL term (ref_logprobs may be undefined)
  KlEstimator kl_estimator = KlEstimator::kK3;
};

struct LossInputs {
  at::Tensor logprobs;      // [N, T] float32 log pi_theta of the response tokens (carries the graph)
  at::Tensor old_logprobs;  // [N, T] float32 log pi_old (no gradient)
  at::Tensor mask;          // [N, T] float32, 1 on the tokens trained on (RolloutBatch::loss_mask: the policy's own
                            // response tokens), 0 on padding and inserted tokens; every row has >= 1 token
  at::Tensor advantages;    // [N] float32 (or [N, T] per-token, GSPO-token and GRPO only)
  at::Tensor ref_logprobs;  // [N, T] float32 log pi_ref, needed only when kl_coef > 0
  IsWeights is;             // mismatch correction (mismatch.h); empty = none
  at::Tensor keep;          // [N, T] bool: tokens in the policy term (top_entropy_quantile); undefined = all
  at::Tensor extra;         // [k] figures of the caller's (e.g. an entropy sum) fetched in the statistics' one
                            // device-to-host copy; LossResult::extra holds them. Undefined = none
};

// The policy term of a sequence covers its kept tokens: response tokens that `keep` and a token-level mis keep (a
// sequence-level mis rejection removes them all). Log-ratios, GSPO's s_i and the token average run over them; a
// sequence without kept tokens contributes 0 and still counts in N (as a zero-advantage one does). Importance
// weights multiply each token's term (token level; for GSPO the sequence term times the mean weight of its kept
// tokens) or each sequence's term (sequence levels). The KL term is over every response token.

// Detached statistics of one loss evaluation (sums, so micro-batches can be added up).
struct LossStats {
  double sequences = 0;            // N
  double tokens = 0;               // tokens in the policy term (sum of mask when nothing is rejected)
  double response_tokens = 0;      // response tokens (sum of mask)
  double seq_ratio_sum = 0;        // sum over sequences of s_i = exp(mean_t log ratio)
  double seq_ratio_min = 1e300, seq_ratio_max = -1e300;
  double seq_clipped_low = 0;      // sequences whose clipped term was chosen with ratio < 1 - eps_low (A < 0)
  double seq_clipped_high = 0;     // ... with ratio > 1 + eps_high (A > 0)
  double tok_clipped_low = 0;      // tokens whose gradient was clipped away on the low side
  double tok_clipped_high = 0;     // ... on the high side
  double kl_sum = 0;               // sum over sequences of the per-sequence mean KL (when kl_coef > 0)
  double kl_seq_sum = 0;           // sum over sequences of the per-sequence summed KL (the sequence-level KL)
  double policy_loss_sum = 0;      // sum over sequences of -min(...) terms
  void add(const LossStats& o);
};

struct LossResult {
  at::Tensor loss;            // scalar: mean over the N sequences of (-policy term + kl_coef * KL)
  double loss_value = 0;      // loss's value, read in the same copy as the statistics
  LossStats stats;
  std::vector<double> extra;  // LossInputs::extra's values
};

// policy_loss reads the device once: the statistics, the loss value, the caller's extra figures and the check that
// every sequence has a response token come back in one copy (a read per figure would stall a GPU each time).

LossResult policy_loss(const LossInputs& in, const LossOptions& opts);

}  // namespace gspo::algo
