#include "gspo/algo/distill.h"

#include <torch/torch.h>

#include <cmath>

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

at::Tensor topk_divergence(const at::Tensor& student_lp, const at::Tensor& teacher_lp, const at::Tensor& mask,
                           config::DistillObjective objective, double jsd_beta) {
  const auto lt = teacher_lp - teacher_lp.logsumexp(-1, /*keepdim=*/true);  // log q_T over S
  const auto qt = lt.exp();
  at::Tensor d;
  if (objective == config::DistillObjective::kForwardKl) {
    d = (qt * (lt - student_lp)).sum(-1);
  } else {
    const auto ls = student_lp - student_lp.logsumexp(-1, /*keepdim=*/true);  // log q_S over S
    const auto lm = torch::logsumexp(torch::stack({lt + std::log(jsd_beta), ls + std::log1p(-jsd_beta)}), 0);
    d = jsd_beta * (qt * (lt - lm)).sum(-1) + (1 - jsd_beta) * (ls.exp() * (ls - lm)).sum(-1);
  }
  const auto m = mask.to(torch::kFloat);
  return (d * m).sum(1) / m.sum(1).clamp_min(1);
}

}  // namespace gspo::algo
