// On-policy distillation's per-token advantage (docs/algorithm.md "On-policy distillation"): a frozen teacher's
// log-probs of the tokens the student sampled, against the student's old log-probs, beside the sequence reward's
// group advantage. Plain tensors, no model: checkable against any implementation.
//
//   A_{i,t} = reward_weight * A_i + coef * clip(log pi_T(y_{i,t}) - log pi_old(y_{i,t}), -c, c)     (c = 0: no clip)
//
// on the trained tokens (mask 1), 0 elsewhere. Its expectation under the student is the negative reverse KL
// KL(pi_old || pi_T) of the prefix's next-token distributions: maximising it with the token-level clipped loss
// (GSPO-token, GRPO) moves the student toward the teacher on its own trajectories. A row whose teacher log-probs are
// not finite on a trained token keeps its reward term only, and is counted (never a silent zero for the batch).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "gspo/config/options_distill.h"

namespace gspo::algo {

struct DistillTerms {
  at::Tensor advantages;     // [n, R] float32 per-token advantages
  double kl_sum = 0;         // sum over trained tokens of log pi_old - log pi_T (the k1 reverse-KL estimate)
  double tokens = 0;         // trained tokens counted in kl_sum (rows that failed left out)
  double teacher_abs = 0;    // sum over trained tokens of |coef * clipped term|
  double reward_abs = 0;     // sum over trained tokens of |reward_weight * A_i|
  int64_t failed_rows = 0;   // rows with a non-finite teacher log-prob on a trained token
};

// seq_adv [n] (or [n, R]: used per token as it is), teacher_lp / old_lp / mask [n, R] float32 on one device. One
// device-to-host read for the statistics.
DistillTerms distill_advantages(const at::Tensor& seq_adv, const at::Tensor& teacher_lp, const at::Tensor& old_lp,
                                const at::Tensor& mask, const config::DistillOptions& opts);

// forward_kl and jsd (distill.objective) at each trained position t, over S = the teacher's top-k ids there, the
// teacher renormalised over S: q_T(v) = p_T(v) / sum_{u in S} p_T(u).
//   forward_kl: D_t = sum_{v in S} q_T(v) (log q_T(v) - log p_S(v))     (p_S: the student's full softmax)
//   jsd:        q_S = p_S renormalised over S, M = beta q_T + (1 - beta) q_S,
//               D_t = beta KL(q_T || M) + (1 - beta) KL(q_S || M)
// With S the whole vocabulary both are the exact divergences. student_lp / teacher_lp [n, R, k] float32 (log p at
// the ids of S), mask [n, R]. Returns the per-sequence mean (1/|y_i|) sum_t mask D_t, [n], differentiable with
// respect to student_lp (a row without masked tokens: 0).
at::Tensor topk_divergence(const at::Tensor& student_lp, const at::Tensor& teacher_lp, const at::Tensor& mask,
                           config::DistillObjective objective, double jsd_beta);

}  // namespace gspo::algo
