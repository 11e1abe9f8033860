#include "gspo/algo/loss.h"

#include <torch/torch.h>

#include "gspo/core/error.h"

namespace gspo::algo {

void LossStats::add(const LossStats& o) {
  sequences += o.sequences;
  tokens += o.tokens;
  response_tokens += o.response_tokens;
  seq_ratio_sum += o.seq_ratio_sum;
  seq_ratio_min = std::min(seq_ratio_min, o.seq_ratio_min);
  seq_ratio_max = std::max(seq_ratio_max, o.seq_ratio_max);
  seq_clipped_low += o.seq_clipped_low;
  seq_clipped_high += o.seq_clipped_high;
  tok_clipped_low += o.tok_clipped_low;
  tok_clipped_high += o.tok_clipped_high;
  kl_sum += o.kl_sum;
  kl_seq_sum += o.kl_seq_sum;
  policy_loss_sum += o.policy_loss_sum;
}

namespace {

// Zero where the mask is 0 (robust to non-finite values in padded columns).
at::Tensor masked(const at::Tensor& x, const at::Tensor& valid) { return torch::where(valid, x, torch::zeros_like(x)); }

at::Tensor clamp_log_ratio(const at::Tensor& lr, double clamp) { return clamp > 0 ? lr.clamp_max(clamp) : lr; }

// min(r A, clip(r) A) and which side was clipped (only where the clipped term is strictly smaller).
struct Surrogate {
  at::Tensor term, low, high;
};
Surrogate surrogate(const at::Tensor& ratio, const at::Tensor& adv, const LossOptions& o) {
  auto unclipped = ratio * adv;
  auto clipped = ratio.clamp(1.0 - o.clip_low, 1.0 + o.clip_high) * adv;
  Surrogate s;
  s.term = torch::min(unclipped, clipped);
  auto chose_clip = clipped < unclipped;
  s.low = chose_clip & (ratio < 1.0 - o.clip_low);
  s.high = chose_clip & (ratio > 1.0 + o.clip_high);
  return s;
}

at::Tensor kl_per_token(const at::Tensor& logp, const at::Tensor& ref, const at::Tensor& valid, KlEstimator k) {
  auto d = masked(ref - logp, valid);  // log pi_ref - log pi_theta
  if (k == KlEstimator::kK1) return -d;
  return torch::exp(d) - d - 1.0;
}

}  // namespace

// Tokens in the policy term: response tokens, less what `keep` and a mis correction leave out.
at::Tensor kept_tokens(const LossInputs& in, const at::Tensor& valid) {
  auto kept = valid;
  if (in.keep.defined()) kept = kept & in.keep;
  if (in.is.keep.defined()) kept = kept & (in.is.token_level() ? in.is.keep : in.is.keep.unsqueeze(1));
  return kept;
}

LossResult policy_loss(const LossInputs& in, const LossOptions& o) {
  const auto valid = in.mask > 0;
  const auto kept = kept_tokens(in, valid);
  const auto len = kept.to(in.mask.scalar_type()).sum(1);  // kept tokens per sequence (= mask sums without rejection)
  const auto has = len > 0;
  const auto safe_len = len.clamp_min(1);
  const bool tok_w = in.is.weight.defined() && in.is.token_level();
  const bool seq_w = in.is.weight.defined() && !in.is.token_level();
  const int64_t N = in.mask.size(0);
  const auto log_ratio = masked(in.logprobs - in.old_logprobs, kept);
  const auto seq_log_ratio = log_ratio.sum(1) / safe_len;  // log s_i over the kept tokens, unclamped
  const bool per_token_adv = in.advantages.dim() == 2;
  TORCH_CHECK(!(per_token_adv && o.kind == LossKind::kGspo), "GSPO needs one advantage per sequence; use gspo_token");
  const auto adv_tok = per_token_adv ? in.advantages : in.advantages.unsqueeze(1).expand_as(in.mask);

  LossStats st;
  at::Tensor per_seq;  // [N] policy term of each sequence (to maximise)
  at::Tensor tok_low, tok_high, seq_low, seq_high;
  switch (o.kind) {
    case LossKind::kGspo: {
      auto s = torch::exp(clamp_log_ratio(seq_log_ratio, o.log_ratio_clamp));
      auto sur = surrogate(s, in.advantages, o);
      per_seq = sur.term;
      if (tok_w) per_seq = per_seq * (masked(in.is.weight.to(per_seq.scalar_type()), kept).sum(1) / safe_len);
      seq_low = sur.low & has;
      seq_high = sur.high & has;
      tok_low = seq_low.unsqueeze(1) & kept;
      tok_high = seq_high.unsqueeze(1) & kept;
      break;
    }
    case LossKind::kGspoToken:
    case LossKind::kGrpo: {
      at::Tensor ratio;
      if (o.kind == LossKind::kGspoToken) {
        // s_i,t = sg[s_i] * pi / sg[pi]: equal to s_i in value, gradient of log pi_t scaled by s_i.
        auto s = torch::exp(clamp_log_ratio(seq_log_ratio, o.log_ratio_clamp)).detach();
        ratio = s.unsqueeze(1) * torch::exp(in.logprobs - in.logprobs.detach());
      } else {
        ratio = torch::exp(clamp_log_ratio(log_ratio, o.log_ratio_clamp));  // GRPO's token ratio
      }
      // Token-level terms averaged within each sequence; a sequence counts as clipped if any token was.
      auto sur = surrogate(ratio, adv_tok, o);
      auto term = tok_w ? sur.term * in.is.weight.to(sur.term.scalar_type()) : sur.term;
      per_seq = masked(term, kept).sum(1) / safe_len;
      tok_low = sur.low & kept;
      tok_high = sur.high & kept;
      seq_low = tok_low.any(1);
      seq_high = tok_high.any(1);
      break;
    }
  }
  if (seq_w) per_seq = per_seq * in.is.weight.to(per_seq.scalar_type());
  if (in.keep.defined() || in.is.keep.defined()) per_seq = torch::where(has, per_seq, torch::zeros_like(per_seq));
  auto loss = -per_seq.mean();
  at::Tensor kl_sum = torch::zeros({}, per_seq.options()), kl_seq_sum = kl_sum;
  if (o.kl_coef > 0) {
    TORCH_CHECK(in.ref_logprobs.defined(), "policy_loss: kl_coef > 0 needs ref_logprobs");
    auto kl_total = masked(kl_per_token(in.logprobs, in.ref_logprobs, valid, o.kl_estimator), valid).sum(1);
    auto kl_seq = kl_total / in.mask.sum(1);
    loss = loss + o.kl_coef * kl_seq.mean();
    kl_sum = kl_seq.detach().sum();
    kl_seq_sum = kl_total.detach().sum();
  }

  // All statistics in one tensor and one device-to-host copy (a sync per value would stall a GPU every micro-batch).
  torch::NoGradGuard g;
  auto seq_ratio = torch::exp(seq_log_ratio.detach());
  auto d = [](const at::Tensor& t) { return t.to(torch::kDouble); };
  auto v = torch::stack({d(len.sum()), d(seq_ratio.sum()), d(seq_ratio.min()), d(seq_ratio.max()), d(seq_low.sum()),
                         d(seq_high.sum()), d(tok_low.sum()), d(tok_high.sum()), d(kl_sum), d(-per_seq.detach().sum()),
                         d(kl_seq_sum), d(in.mask.sum()), d(in.mask.sum(1).min()), d(loss.detach())});
  if (in.extra.defined()) v = torch::cat({v, d(in.extra.detach().reshape({-1}))});
  v = v.to(torch::kCPU);
  auto a = v.accessor<double, 1>();
  TORCH_CHECK(a[12] > 0, "policy_loss: every sequence needs at least one response token");
  st.sequences = static_cast<double>(N);
  st.tokens = a[0];
  st.seq_ratio_sum = a[1];
  st.seq_ratio_min = a[2];
  st.seq_ratio_max = a[3];
  st.seq_clipped_low = a[4];
  st.seq_clipped_high = a[5];
  st.tok_clipped_low = a[6];
  st.tok_clipped_high = a[7];
  st.kl_sum = a[8];
  st.policy_loss_sum = a[9];
  st.kl_seq_sum = a[10];
  st.response_tokens = a[11];
  std::vector<double> extra;
  for (int64_t i = 14; i < v.numel(); ++i) extra.push_back(a[i]);
  return {loss, a[13], st, std::move(extra)};
}

}  // namespace gspo::algo
