#include "gspo/rollout/sampling.h"

#include <torch/torch.h>

#include <limits>

#include "gspo/rollout/invert_cdf.h"

namespace gspo::rollout {

double logprob_temperature(double temperature) { return temperature > 0 ? temperature : 1.0; }

at::Tensor filter_logits(const at::Tensor& scaled, int64_t top_k, double top_p) {
  at::Tensor out = scaled;
  const int64_t V = scaled.size(-1);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (top_k > 0 && top_k < V) {
    auto kth = std::get<0>(out.topk(top_k, -1)).select(-1, top_k - 1).unsqueeze(-1);
    out = out.masked_fill(out < kth, neg_inf);
  }
  if (top_p < 1.0) {
    auto sorted = out.sort(-1, /*descending=*/true);
    auto values = std::get<0>(sorted);
    auto index = std::get<1>(sorted);
    auto probs = values.softmax(-1);
    // Mass strictly before each token; a token is kept while that mass is < top_p (so the first always is).
    auto before = probs.cumsum(-1) - probs;
    auto drop_sorted = before >= top_p;
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, index, drop_sorted);
    out = out.masked_fill(drop, neg_inf);
  }
  return out;
}

namespace {
at::Tensor invert_cdf(const at::Tensor& probs, const at::Tensor& uniforms) {
  // CPU: one fused pass per row, no [N, V] float64 cumsum (invert_cdf.h); same draw up to float64 rounding.
  if (probs.device().is_cpu() && probs.dim() == 2 && probs.scalar_type() == at::kFloat)
    return invert_cdf_cpu(probs, uniforms);
  auto cdf = probs.to(torch::kDouble).cumsum(-1);
  auto x = (uniforms.to(cdf.device()) * cdf.select(-1, cdf.size(-1) - 1)).unsqueeze(-1);
  auto idx = torch::searchsorted(cdf, x, /*out_int32=*/false, /*right=*/true).squeeze(-1);
  // u * total can round up to total; the most likely token is then a safe choice (never a filtered one).
  return torch::where(idx >= probs.size(-1), probs.argmax(-1), idx);
}
}  // namespace

Draw sample_next(const at::Tensor& logits, const SamplingParams& p, const at::Tensor& uniforms, int64_t banned,
                 const at::Tensor& ban_rows) {
  return sample_next(logits, p, uniforms, banned >= 0 ? std::vector<int64_t>{banned} : std::vector<int64_t>{}, ban_rows);
}

Draw sample_next(const at::Tensor& logits, const SamplingParams& p, const at::Tensor& uniforms,
                 const std::vector<int64_t>& banned_ids, const at::Tensor& ban_rows) {
  Draw d;
  const double t = logprob_temperature(p.temperature);
  auto scaled = t == 1.0 ? logits : logits / t;
  auto logp = scaled.log_softmax(-1);
  // Padded vocabulary rows the tokenizer cannot decode are excluded from the choice (like a top-k exclusion).
  const bool limited = p.vocab_limit > 0 && p.vocab_limit < logits.size(-1);
  auto choosable = limited ? scaled.narrow(-1, 0, p.vocab_limit) : scaled;
  std::vector<int64_t> banned;
  for (const int64_t id : banned_ids)
    if (id >= 0 && id < choosable.size(-1)) banned.push_back(id);
  const bool masked = !banned.empty();
  if (masked) {
    choosable = choosable.clone();
    for (const int64_t id : banned) {
      if (ban_rows.defined())
        choosable.select(-1, id).masked_fill_(ban_rows, -std::numeric_limits<float>::infinity());
      else
        choosable.select(-1, id).fill_(-std::numeric_limits<float>::infinity());
    }
  }
  if (p.temperature <= 0) {
    d.tokens = choosable.argmax(-1);
  } else {
    const bool filtering = (p.top_k > 0 && p.top_k < choosable.size(-1)) || p.top_p < 1.0;
    auto probs = filtering ? filter_logits(choosable, p.top_k, p.top_p).softmax(-1)
                           : (limited || masked ? choosable.softmax(-1) : logp.exp());
    d.tokens = invert_cdf(probs, uniforms);
  }
  d.logprobs = logp.gather(-1, d.tokens.unsqueeze(-1)).squeeze(-1);
  return d;
}

}  // namespace gspo::rollout
