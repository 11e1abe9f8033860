#include "gspo/algo/distill.h"

#include <torch/torch.h>

namespace gspo::algo {

DistillTerms distill_advantages(const at::Tensor& seq_adv, const at::Tensor& teacher_lp, const at::Tensor& old_lp,
                                const at::Tensor& mask, const config::DistillOptions& opts) {
  const auto m = mask.to(torch::kFloat);
  const auto t = teacher_lp.to(torch::kFloat), o = old_lp.to(torch::kFloat);
  // Rows with a non-finite teacher log-prob on a trained token: no teacher term at all.
  const auto bad_tok = torch::logical_not(torch::isfinite(t)).logical_and(m > 0);
  const auto bad_row = bad_tok.any(1);
  const auto ok = torch::logical_not(bad_row).unsqueeze(1).to(torch::kFloat) * m;
  auto term = torch::where(ok > 0, t - o, torch::zeros_like(o));
  if (opts.clip > 0) term = term.clamp(-opts.clip, opts.clip);
  const auto teacher = opts.coef * term * ok;
  const auto a = seq_adv.dim() == 1 ? seq_adv.to(torch::kFloat).unsqueeze(1) : seq_adv.to(torch::kFloat);
  const auto reward = opts.reward_weight * a * m;
  DistillTerms out;
  out.advantages = reward + teacher;
  const auto kl = torch::where(ok > 0, o - t, torch::zeros_like(o));
  const auto stats = torch::stack({kl.sum(), ok.sum(), teacher.abs().sum(), reward.abs().sum(),
                                   bad_row.sum().to(torch::kFloat)})
                         .to(torch::kDouble)
                         .cpu();
  const auto s = stats.accessor<double, 1>();
  out.kl_sum = s[0];
  out.tokens = s[1];
  out.teacher_abs = s[2];
  out.reward_abs = s[3];
  out.failed_rows = static_cast<int64_t>(s[4]);
  return out;
}

}  // namespace gspo::algo
