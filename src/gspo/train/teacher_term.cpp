#include "gspo/train/teacher_term.h"

#include <torch/torch.h>

#include <limits>

#include "gspo/algo/distill.h"
#include "gspo/core/clock.h"
#include "gspo/rollout/sampling.h"
#include "gspo/train/metrics/metrics.h"
#include "gspo/train/minibatch.h"

namespace gspo::train {

TeacherTerm::TeacherTerm(const config::Config& cfg, model::Policy& teacher, bool nan_fault)
    : opts_(cfg.distill),
      teacher_(teacher),
      temperature_(rollout::logprob_temperature(cfg.rollout.temperature)),
      chunk_(cfg.train.logprob_chunk_tokens),
      context_(teacher_.manifest().max_seq_len),
      nan_fault_(nan_fault) {
  const auto& tr = cfg.train;
  pass_ = {tr.chunked_head || tr.activation_checkpointing, false, tr.chunked_head};  // (no expert parallelism)
}

at::Tensor TeacherTerm::logprobs(const at::Tensor& ids, const at::Tensor& mask, int64_t P, const KnownShape& shape,
                                 at::Tensor* too_long) {
  torch::NoGradGuard g;
  const int64_t widest = shape.width > 0 ? shape.width : mask.sum(1).max().item<int64_t>();
  if (context_ <= 0 || widest <= context_) {
    if (too_long) *too_long = torch::zeros({ids.size(0)}, ids.options().dtype(torch::kBool));
    return response_logprobs(teacher_, ids, mask, P, temperature_, Entropy::kSkip, chunk_, pass_, {}, shape).logprobs;
  }
  const auto longer = mask.sum(1) > context_;
  if (too_long) *too_long = longer;
  const auto fit = torch::nonzero(torch::logical_not(longer)).squeeze(1);
  auto lp = torch::full({ids.size(0), ids.size(1) - P}, std::numeric_limits<float>::quiet_NaN(),
                        ids.options().dtype(torch::kFloat));
  if (fit.numel() > 0)  // (the rows that fit, as a batch of their own: its width is theirs)
    lp.index_copy_(0, fit, response_logprobs(teacher_, ids.index_select(0, fit), mask.index_select(0, fit), P,
                                             temperature_, Entropy::kSkip, chunk_, pass_).logprobs);
  return lp;
}

void TeacherTerm::apply(Micro& mi, int64_t P) {
  torch::NoGradGuard g;
  const auto t0 = core::Clock::now();
  at::Tensor too_long;
  auto t_lp = logprobs(mi.ids, mi.mask, P, mi.shape, &too_long);
  if (nan_fault_) t_lp[0].fill_(std::numeric_limits<float>::quiet_NaN());
  auto terms = algo::distill_advantages(mi.advantages, t_lp, mi.old_lp, mi.loss_mask, opts_);
  mi.advantages = terms.advantages;
  const auto long_rows = too_long.any().item<bool>() ? too_long.sum().item<int64_t>() : 0;
  kl_sum_ += terms.kl_sum;
  tokens_ += terms.tokens;
  teacher_abs_ += terms.teacher_abs;
  reward_abs_ += terms.reward_abs;
  long_rows_ += long_rows;
  failed_rows_ += terms.failed_rows - long_rows;
  teacher_tokens_ += mi.real_tokens;
  seconds_ += core::seconds_since(t0);
}

void TeacherTerm::take(StepMetrics& m) {
  m.distill_kl = {kl_sum_, tokens_};
  m.distill_share = {teacher_abs_, teacher_abs_ + reward_abs_};
  m.distill_failed_rows = failed_rows_;
  m.distill_long_rows = long_rows_;
  m.teacher_tokens = teacher_tokens_;
  m.time_teacher_s = seconds_;
  kl_sum_ = tokens_ = teacher_abs_ = reward_abs_ = seconds_ = 0;
  failed_rows_ = long_rows_ = teacher_tokens_ = 0;
}

}  // namespace gspo::train
