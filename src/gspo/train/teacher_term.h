// On-policy distillation in the step (distill.teacher; docs/algorithm.md "On-policy distillation"): a frozen teacher
// scores every micro-batch's rows by one no-grad pass after the old log-probs, and the rows' sequence advantages
// become per-token ones (algo/distill.h):
//
//   A_{i,t} = reward_weight * A_i + coef * clip(log pi_T(y_{i,t}) - log pi_old(y_{i,t}))
//
// Both log-probs are taken at the sampling temperature (rollout::logprob_temperature). The teacher runs on the
// training ranks, on their own rows (beside rollout ranks too: the rows reach the trainers, the terms are made there).
// A row the teacher cannot score keeps its reward term only and is counted: a non-finite teacher log-prob on a trained
// token, or more tokens (prompt + response) than the teacher's context.
#pragma once
#include <cstdint>
#include <memory>

#include "gspo/config/options.h"
#include "gspo/model/policy.h"
#include "gspo/train/logprobs.h"

namespace gspo::train {

struct Micro;
struct StepMetrics;

class TeacherTerm {
 public:
  // `teacher` loaded (setup/teacher.h), held by the caller; `nan_fault`: GSPO_FAULT=teacher_nan (setup/fault.h),
  // tests only.
  TeacherTerm(const config::Config& cfg, model::Policy& teacher, bool nan_fault = false);
  // No gradient. mi.old_lp filled; mi.advantages [n] -> [n, r] per-token advantages.
  void apply(Micro& mi, int64_t prompt_len);
  // This rank's figures since the last take (distill_kl, distill_teacher_share, the failed rows, teacher tokens and
  // seconds) into `m`, then starts over.
  void take(StepMetrics& m);
  // The teacher's log-probs of the response tokens of ids/mask [n, P + R] (rollout layout), [n, R] float32, NaN on
  // the rows longer than its context (true in `too_long` [n], when given). No gradient.
  at::Tensor logprobs(const at::Tensor& ids, const at::Tensor& mask, int64_t prompt_len, const KnownShape& shape = {},
                      at::Tensor* too_long = nullptr);
  model::Policy& model() { return teacher_; }

 private:

  config::DistillOptions opts_;
  model::Policy& teacher_;
  double temperature_;
  int64_t chunk_;
  LogprobPass pass_;
  int64_t context_;  // the teacher's max_seq_len (0: unbounded)
  bool nan_fault_;
  double kl_sum_ = 0, tokens_ = 0, teacher_abs_ = 0, reward_abs_ = 0, seconds_ = 0;
  int64_t failed_rows_ = 0, long_rows_ = 0, teacher_tokens_ = 0;
};

}  // namespace gspo::train
