#include "gspo/algo/loss.h"

#include <torch/torch.h>

#include <array>

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

namespace {

// The tokens of the policy term and their log-ratios, shared by every loss kind.
struct Kept {
  at::Tensor valid;          // [N, T] bool: response tokens
  at::Tensor kept;           // [N, T] bool: tokens in the policy term
  at::Tensor len;            // [N] kept tokens per sequence (= mask sums without rejection)
  at::Tensor has;            // [N] bool: sequences with a kept token
  at::Tensor safe_len;       // [N] len, at least 1
  at::Tensor log_ratio;      // [N, T] log pi_theta - log pi_old, 0 outside the kept tokens
  at::Tensor seq_log_ratio;  // [N] log s_i over the kept tokens, unclamped
};
Kept kept_of(const LossInputs& in) {
  Kept k;
  k.valid = in.mask > 0;
  k.kept = kept_tokens(in, k.valid);
  k.len = k.kept.to(in.mask.scalar_type()).sum(1);
  k.has = k.len > 0;
  k.safe_len = k.len.clamp_min(1);
  k.log_ratio = masked(in.logprobs - in.old_logprobs, k.kept);
  k.seq_log_ratio = k.log_ratio.sum(1) / k.safe_len;
  return k;
}

// Each sequence's policy term (to maximise) and which sequences and tokens were clipped on each side.
struct PolicyTerm {
  at::Tensor per_seq;  // [N]
  at::Tensor tok_low, tok_high, seq_low, seq_high;
};

// GSPO: the surrogate of the sequence ratio s_i; a clipped sequence clips all its kept tokens.
PolicyTerm gspo_term(const LossInputs& in, const LossOptions& o, const Kept& k, bool tok_w) {
  PolicyTerm p;
  auto s = torch::exp(clamp_log_ratio(k.seq_log_ratio, o.log_ratio_clamp));
  auto sur = surrogate(s, in.advantages, o);
  p.per_seq = sur.term;
  if (tok_w) p.per_seq = p.per_seq * (masked(in.is.weight.to(p.per_seq.scalar_type()), k.kept).sum(1) / k.safe_len);
  p.seq_low = sur.low & k.has;
  p.seq_high = sur.high & k.has;
  p.tok_low = p.seq_low.unsqueeze(1) & k.kept;
  p.tok_high = p.seq_high.unsqueeze(1) & k.kept;
  return p;
}

// GSPO-token and GRPO: token-level terms averaged within each sequence; a sequence counts as clipped if any token was.
PolicyTerm token_term(const LossInputs& in, const LossOptions& o, const Kept& k, bool tok_w,
                      const at::Tensor& adv_tok) {
  at::Tensor ratio;
  if (o.kind == LossKind::kGspoToken) {
    // s_i,t = sg[s_i] * pi / sg[pi]: equal to s_i in value, gradient of log pi_t scaled by s_i.
    auto s = torch::exp(clamp_log_ratio(k.seq_log_ratio, o.log_ratio_clamp)).detach();
    ratio = s.unsqueeze(1) * torch::exp(in.logprobs - in.logprobs.detach());
  } else {
    ratio = torch::exp(clamp_log_ratio(k.log_ratio, o.log_ratio_clamp));  // GRPO's token ratio
  }
  PolicyTerm p;
  auto sur = surrogate(ratio, adv_tok, o);
  auto term = tok_w ? sur.term * in.is.weight.to(sur.term.scalar_type()) : sur.term;
  p.per_seq = masked(term, k.kept).sum(1) / k.safe_len;
  p.tok_low = sur.low & k.kept;
  p.tok_high = sur.high & k.kept;
  p.seq_low = p.tok_low.any(1);
  p.seq_high = p.tok_high.any(1);
  return p;
}

// The loss with its KL term added, and the KL's detached sums (zeros when kl_coef is 0).
struct WithKl {
  at::Tensor loss, kl_sum, kl_seq_sum;
};
WithKl add_kl(at::Tensor loss, const LossInputs& in, const LossOptions& o, const Kept& k,
              const at::TensorOptions& options) {
  WithKl r{std::move(loss), torch::zeros({}, options), {}};
  r.kl_seq_sum = r.kl_sum;
  if (o.kl_coef > 0) {
    TORCH_CHECK(in.ref_logprobs.defined(), "policy_loss: kl_coef > 0 needs ref_logprobs");
    auto kl_total = masked(kl_per_token(in.logprobs, in.ref_logprobs, k.valid, o.kl_estimator), k.valid).sum(1);
    auto kl_seq = kl_total / in.mask.sum(1);
    r.loss = r.loss + o.kl_coef * kl_seq.mean();
    r.kl_sum = kl_seq.detach().sum();
    r.kl_seq_sum = kl_total.detach().sum();
  }
  return r;
}

// The figures of the one device-to-host copy, in their order there; the caller's extra figures follow kPacked.
enum Packed : int64_t {
  kTokens, kSeqRatioSum, kSeqRatioMin, kSeqRatioMax, kSeqClippedLow, kSeqClippedHigh, kTokClippedLow,
  kTokClippedHigh, kKlSum, kPolicyLossSum, kKlSeqSum, kResponseTokens, kShortestResponse, kLossValue, kPacked
};

// Every figure as float64 in one tensor on the device (the caller's extra ones at the end).
at::Tensor pack_figures(const LossInputs& in, const Kept& k, const PolicyTerm& p, const WithKl& r) {
  auto seq_ratio = torch::exp(k.seq_log_ratio.detach());
  auto d = [](const at::Tensor& t) { return t.to(torch::kDouble); };
  std::array<at::Tensor, kPacked> f;
  f[kTokens] = d(k.len.sum());
  f[kSeqRatioSum] = d(seq_ratio.sum());
  f[kSeqRatioMin] = d(seq_ratio.min());
  f[kSeqRatioMax] = d(seq_ratio.max());
  f[kSeqClippedLow] = d(p.seq_low.sum());
  f[kSeqClippedHigh] = d(p.seq_high.sum());
  f[kTokClippedLow] = d(p.tok_low.sum());
  f[kTokClippedHigh] = d(p.tok_high.sum());
  f[kKlSum] = d(r.kl_sum);
  f[kPolicyLossSum] = d(-p.per_seq.detach().sum());
  f[kKlSeqSum] = d(r.kl_seq_sum);
  f[kResponseTokens] = d(in.mask.sum());
  f[kShortestResponse] = d(in.mask.sum(1).min());
  f[kLossValue] = d(r.loss.detach());
  auto v = torch::stack(f);
  if (in.extra.defined()) v = torch::cat({v, d(in.extra.detach().reshape({-1}))});
  return v;
}

// The statistics from the packed figures (host).
LossStats unpack_stats(const at::TensorAccessor<double, 1>& a, int64_t sequences) {
  LossStats st;
  st.sequences = static_cast<double>(sequences);
  st.tokens = a[kTokens];
  st.seq_ratio_sum = a[kSeqRatioSum];
  st.seq_ratio_min = a[kSeqRatioMin];
  st.seq_ratio_max = a[kSeqRatioMax];
  st.seq_clipped_low = a[kSeqClippedLow];
  st.seq_clipped_high = a[kSeqClippedHigh];
  st.tok_clipped_low = a[kTokClippedLow];
  st.tok_clipped_high = a[kTokClippedHigh];
  st.kl_sum = a[kKlSum];
  st.policy_loss_sum = a[kPolicyLossSum];
  st.kl_seq_sum = a[kKlSeqSum];
  st.response_tokens = a[kResponseTokens];
  return st;
}

}  // namespace

LossResult policy_loss(const LossInputs& in, const LossOptions& o) {
  const auto k = kept_of(in);
  const bool tok_w = in.is.weight.defined() && in.is.token_level();
  const bool seq_w = in.is.weight.defined() && !in.is.token_level();
  const bool per_token_adv = in.advantages.dim() == 2;
  TORCH_CHECK(!(per_token_adv && o.kind == LossKind::kGspo), "GSPO needs one advantage per sequence; use gspo_token");
  const auto adv_tok = per_token_adv ? in.advantages : in.advantages.unsqueeze(1).expand_as(in.mask);

  PolicyTerm p;
  switch (o.kind) {
    case LossKind::kGspo:
      p = gspo_term(in, o, k, tok_w);
      break;
    case LossKind::kGspoToken:
    case LossKind::kGrpo:
      p = token_term(in, o, k, tok_w, adv_tok);
      break;
  }
  auto& per_seq = p.per_seq;
  if (seq_w) per_seq = per_seq * in.is.weight.to(per_seq.scalar_type());
  if (in.keep.defined() || in.is.keep.defined()) per_seq = torch::where(k.has, per_seq, torch::zeros_like(per_seq));
  const auto r = add_kl(-per_seq.mean(), in, o, k, per_seq.options());

  // All statistics in one tensor and one device-to-host copy (a sync per value would stall a GPU every micro-batch).
  torch::NoGradGuard g;
  const auto v = pack_figures(in, k, p, r).to(torch::kCPU);
  const auto a = v.accessor<double, 1>();
  TORCH_CHECK(a[kShortestResponse] > 0, "policy_loss: every sequence needs at least one response token");
  std::vector<double> extra;
  for (int64_t i = kPacked; i < v.numel(); ++i) extra.push_back(a[i]);
  return {r.loss, a[kLossValue], unpack_stats(a, in.mask.size(0)), std::move(extra)};
}

}  // namespace gspo::algo
