// Comparing two samplings of the same rows that ran with different batch shapes, cache layouts or code paths (and
// so computed logits that differ by float rounding): log-probs within a tolerance, token ids equal except where a
// draw fell so close to a CDF bucket edge that the rounding could move it to the neighbouring token.
#pragma once
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "gspo/model/policy.h"
#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler.h"

namespace gspo::test {

// Log-probs of one token from two decodes of different batch shapes: float32 sums in another order differ by about
// 1e-6 (the 7th digit, seen on AMD EPYC's BLAS); 1e-5 leaves 10x and stays far below the error of a wrong row,
// position or cache entry.
constexpr double kLogprobTol = 1e-5;
// A token can flip between two such runs only where its draw u * total lies closer to a CDF bucket edge than the
// runs' CDFs differ. Margins are measured on a full forward, whose logits differ from a cached decode's by < 1e-4
// (the KV-cache test's bound), which moves the CDF and the draw point by < 2e-4 each: a flip needs a margin
// < 2e-4 there, and 1e-3 leaves 5x.
constexpr double kFlipMargin = 1e-3;

// Distance of each sampled token's draw point u * total from the nearest edge of the CDF it was drawn from,
// recomputed from a full forward over b's finished sequences: [N, R] float64 on the CPU, +inf on padding. For
// unfiltered sampling (top_k 0, top_p 1) at temperature t, with the sampler's vocab_limit (0 = none) and noise key.
inline at::Tensor cdf_margins(model::Policy& policy, const rollout::RolloutBatch& b, const rollout::NoiseKey& key,
                              double t, int64_t vocab_limit) {
  torch::NoGradGuard g;
  const int64_t N = b.num_rows(), P = b.prompt_len, R = b.input_ids.size(1) - P;
  const auto dev = policy.device();
  auto logits = policy.logits(b.input_ids.to(dev), b.attention_mask.to(dev)).to(torch::kCPU).to(torch::kFloat);
  auto scaled = logits.narrow(1, P - 1, R) / t;  // [N, R, V]
  if (vocab_limit > 0) scaled = scaled.narrow(-1, 0, vocab_limit);
  auto cdf = scaled.softmax(-1).to(torch::kDouble).cumsum(-1);  // float32 probabilities, float64 sums: as sample_next
  const int64_t V = cdf.size(-1);
  std::vector<int64_t> rows(N);
  std::iota(rows.begin(), rows.end(), 0);
  auto margin = torch::empty({N, R}, torch::kDouble);
  for (int64_t s = 0; s < R; ++s) {
    auto c = cdf.select(1, s);                                                              // [N, V]
    auto x = rollout::row_uniforms(key, rows, s).unsqueeze(-1) * c.narrow(-1, V - 1, 1);  // [N, 1]
    margin.select(1, s).copy_((c - x).abs().amin(-1));
  }
  return margin.masked_fill(b.response_mask.to(torch::kDouble) == 0, std::numeric_limits<double>::infinity());
}

// Row ra of `a` against row rb of `b`: the same batch row sampled with the same noise under other batch shapes
// (both batches on the CPU, as Sampler::generate returns them).
// Tokens agree up to the first disagreement, which must fall on a token whose margin (cdf_margins of `a`) is below
// kFlipMargin; the contexts differ after it, so nothing further is compared. Log-probs of the agreeing tokens match
// within logprob_tol. Returns whether the whole row agreed (then its length and finish reason too).
inline bool same_row(const rollout::RolloutBatch& a, int64_t ra, const rollout::RolloutBatch& b, int64_t rb,
                     const at::Tensor& margin_a, double logprob_tol = kLogprobTol) {
  INFO("row " << ra << " vs row " << rb);
  const auto& x = a.response_ids[ra];
  const auto& y = b.response_ids[rb];
  auto la = a.behaviour_logprobs.accessor<float, 2>();
  auto lb = b.behaviour_logprobs.accessor<float, 2>();
  auto m = margin_a.accessor<double, 2>();
  double worst = 0;
  for (size_t s = 0; s < std::min(x.size(), y.size()); ++s) {
    if (x[s] != y[s]) {
      INFO("position " << s << ": token " << x[s] << " vs " << y[s] << ", CDF margin " << m[ra][s]);
      CHECK(m[ra][s] < kFlipMargin);
      CHECK(worst <= logprob_tol);
      return false;
    }
    worst = std::max(worst, std::abs(static_cast<double>(la[ra][s]) - static_cast<double>(lb[rb][s])));
  }
  CHECK(worst <= logprob_tol);
  CHECK(x.size() == y.size());
  CHECK(a.finish[ra] == b.finish[rb]);
  return true;
}
}  // namespace gspo::test
