// On-policy distillation in the step (distill.teacher; docs/algorithm.md "On-policy distillation"): a frozen teacher
// scores every micro-batch's rows by one no-grad pass after the old log-probs. reverse_kl: the rows' sequence
// advantages become per-token ones (algo/distill.h):
//
//   A_{i,t} = reward_weight * A_i + coef * clip(log pi_T(y_{i,t}) - log pi_old(y_{i,t}))
//
// forward_kl / jsd: the teacher's top-k at each position is kept with the rows, and the update adds coef x the
// divergence of the student's distribution there (loss_term) to the policy loss of reward_weight * A_i.
//
// Both log-probs are taken at the sampling temperature (rollout::logprob_temperature). The teacher runs on the
// training ranks, on their own rows (beside rollout ranks too: the rows reach the trainers, the terms are made there).
// A row the teacher cannot score keeps its reward term only and is counted: a non-finite teacher log-prob on a trained
// token, or more tokens (prompt + response) than the teacher's context.
//
// distill.chat_template other than student (TeacherPrompts, setup/teacher.h): each row's prompt columns are replaced
// by its example's prompt in the teacher's format before the teacher's pass; the response columns, and so every
// per-token term, stay the policy's. Rendered once per group a step (its G rows share the ids, as the rollout shares
// the prompt's prefill).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/model/policy.h"
#include "gspo/train/logprobs.h"

namespace gspo::train {

struct Micro;
struct StepMetrics;
struct Scored;
class TeacherPrompts;

class TeacherTerm {
 public:
  // `teacher` loaded (setup/teacher.h), held by the caller; `nan_fault`: GSPO_FAULT=teacher_nan (setup/fault.h),
  // tests only.
  // `prompts` (held by the caller; null: distill.chat_template student) re-renders the rows' prompts.
  TeacherTerm(const config::Config& cfg, model::Policy& teacher, bool nan_fault = false,
              const TeacherPrompts* prompts = nullptr);
  // Before a step's passes over `s`'s rows: with prompts of its own, renders those of the rows' examples
  // (std::logic_error for a row whose example is unknown). Nothing otherwise.
  void begin_step(const Scored& s);
  // No gradient. mi.old_lp filled. reverse_kl: mi.advantages [n] -> [n, r] per-token advantages. forward_kl / jsd:
  // mi.advantages scaled by reward_weight, the teacher's top-k into mi.teacher_ids / teacher_lp / teacher_mask.
  void apply(Micro& mi, int64_t prompt_len);
  // forward_kl / jsd, in the update: coef x the per-sequence divergence (algo::topk_divergence) of the student's
  // log-probs at mi.teacher_ids [n, r, k], [n], differentiable. Undefined for reverse_kl.
  at::Tensor loss_term(const at::Tensor& student_topk, const Micro& mi) const;
  // After an applied update: the divergence summed over its sequences (read with the loss statistics) and their count.
  void add_divergence(double sum, double sequences);
  // This rank's figures since the last take (distill_kl, distill_teacher_share, the failed rows, teacher tokens and
  // seconds) into `m`, then starts over.
  void take(StepMetrics& m);
  // The teacher's log-probs of the response tokens of ids/mask [n, P + R] (rollout layout), [n, R] float32, NaN on
  // the rows longer than its context (counted in `long_rows`, when given). No gradient. `rows`: their rows in the
  // step's batch (begin_step; needed with prompts of its own).
  at::Tensor logprobs(const at::Tensor& ids, const at::Tensor& mask, int64_t prompt_len,
                      const std::vector<int64_t>& rows = {}, const KnownShape& shape = {}, int64_t* long_rows = nullptr);
  model::Policy& model() { return teacher_; }

 private:
  // What the teacher reads of rows `rows` given in the rollout layout: the same tensors, or with prompts of its own
  // theirs in place of the prompt columns (the response columns and real_index unchanged, the width from the host).
  struct Input {
    at::Tensor ids, mask;
    int64_t prompt_len;
    KnownShape shape;
  };
  Input input(const at::Tensor& ids, const at::Tensor& mask, int64_t prompt_len, const std::vector<int64_t>& rows,
              const KnownShape& shape) const;
  // As logprobs, with each position's top k (forward_kl, jsd), of an input.
  TopkLogprobs topk(const Input& in, int64_t* long_rows);
  at::Tensor fitting_rows(const at::Tensor& mask, const KnownShape& shape, int64_t* long_rows) const;
  void apply_sampled(Micro& mi, int64_t prompt_len);
  void apply_topk(Micro& mi, int64_t prompt_len);

  config::DistillOptions opts_;
  model::Policy& teacher_;
  double temperature_;
  int64_t chunk_;
  LogprobPass pass_;
  int64_t context_;  // the teacher's max_seq_len (0: unbounded)
  bool nan_fault_;
  const TeacherPrompts* prompts_;
  // With prompts_: per row of the step's batch, its prompt's ids in the teacher's format and its response's length.
  std::vector<std::shared_ptr<const std::vector<int64_t>>> row_prompts_;
  std::vector<int64_t> row_response_;
  double divergence_sum_ = 0, divergence_sequences_ = 0;
  double kl_sum_ = 0, tokens_ = 0, teacher_abs_ = 0, reward_abs_ = 0, seconds_ = 0;
  int64_t failed_rows_ = 0, long_rows_ = 0, teacher_tokens_ = 0;
};

}  // namespace gspo::train
