// The CPU inverse-CDF draw (rollout/invert_cdf.h) against an independent reference: a float64 cumsum over each row
// and a binary search (torch::searchsorted), the computation sample_next used before. The two sum in different
// orders, so a token may differ only where the target lies within kEdge of a CDF edge (relative to the row's total);
// everything else is compared exactly (integer token ids). Also: zero-probability tokens are never chosen, a target
// at the very top of the range, and frequencies over many uniforms match the probabilities.
#include <catch2/catch.hpp>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>

#include "gspo/rollout/invert_cdf.h"

using namespace gspo;

namespace {

constexpr double kEdge = 1e-12;  // relative to the row total; float64 sums of <= 1e5 terms round far below this

// Reference draw and each row's distance from the target to the nearest CDF edge (relative to the total).
std::pair<at::Tensor, at::Tensor> reference(const at::Tensor& probs, const at::Tensor& u) {
  auto cdf = probs.to(torch::kDouble).cumsum(-1);
  auto total = cdf.select(-1, cdf.size(-1) - 1);
  auto x = (u * total).unsqueeze(-1);
  auto idx = torch::searchsorted(cdf, x, /*out_int32=*/false, /*right=*/true).squeeze(-1);
  auto margin = (cdf - x).abs().amin(-1) / total;
  return {idx, margin};
}

// Rows of random probabilities: softmax of scaled Gaussian logits, with a fraction of tokens set to zero (filtered).
at::Tensor random_probs(int64_t N, int64_t V, double zero_frac, uint64_t seed) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto logits = torch::randn({N, V}, g, torch::kFloat) * 3.0;
  auto p = logits.softmax(-1);
  if (zero_frac > 0) {
    auto drop = torch::rand({N, V}, g) < zero_frac;
    drop.select(-1, 0).fill_(false);  // every row keeps token 0
    p = p.masked_fill(drop, 0.0);
  }
  return p;
}

void check_against_reference(const at::Tensor& probs, const at::Tensor& u) {
  auto got = rollout::invert_cdf_cpu(probs, u);
  auto [want, margin] = reference(probs, u);
  auto g = got.accessor<int64_t, 1>();
  auto w = want.accessor<int64_t, 1>();
  auto m = margin.accessor<double, 1>();
  auto p = probs.accessor<float, 2>();
  int64_t exact = 0;
  for (int64_t r = 0; r < probs.size(0); ++r) {
    INFO("row " << r << ": got " << g[r] << ", reference " << w[r] << ", edge margin " << m[r]);
    CHECK(p[r][g[r]] > 0);
    if (g[r] == w[r]) ++exact;
    else CHECK(m[r] < kEdge);
  }
  CHECK(exact >= probs.size(0) - 1);
}

}  // namespace

TEST_CASE("CPU inverse-CDF draw equals a float64 cumsum + searchsorted away from CDF edges", "[rollout]") {
  const int old_threads = at::get_num_threads();
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (int64_t V : {1, 7, 8, 9, 259, 14427}) {
      for (double zero_frac : {0.0, 0.5, 0.99}) {
        INFO("threads " << threads << ", V " << V << ", zero fraction " << zero_frac);
        auto probs = random_probs(64, V, zero_frac, 11 + V);
        auto u = torch::rand({64}, at::make_generator<at::CPUGeneratorImpl>(V), torch::kDouble);
        check_against_reference(probs, u);
      }
    }
  }
  at::set_num_threads(old_threads);
}

TEST_CASE("CPU inverse-CDF draw: extreme targets and unnormalised rows", "[rollout]") {
  // u = 0 takes the first positive token; u just below 1 the last positive one; rows need not sum to 1.
  auto probs = torch::tensor({0.0f, 0.0f, 2.0f, 0.0f, 1.0f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f}).repeat({3, 1});
  auto u = torch::tensor({0.0, std::nextafter(1.0, 0.0), 0.6}, torch::kDouble);
  auto got = rollout::invert_cdf_cpu(probs, u);
  CHECK(got[0].item<int64_t>() == 2);
  CHECK(got[1].item<int64_t>() == 6);
  CHECK(got[2].item<int64_t>() == 4);  // target 0.6 * 3.5 = 2.1: past token 2's 2.0, under token 4's 3.0
}

TEST_CASE("CPU inverse-CDF draw frequencies match the probabilities", "[rollout][stats]") {
  // 200000 draws from one 20-token row (some zero): each count within 5 binomial standard deviations.
  const int64_t V = 20, n = 200000;
  auto row = random_probs(1, V, 0.3, 5);
  auto probs = row.expand({n, V}).contiguous();
  auto u = torch::rand({n}, at::make_generator<at::CPUGeneratorImpl>(7), torch::kDouble);
  auto counts = torch::bincount(rollout::invert_cdf_cpu(probs, u), {}, V).to(torch::kDouble);
  auto p = (row[0] / row[0].sum()).to(torch::kDouble);
  for (int64_t j = 0; j < V; ++j) {
    const double pj = p[j].item<double>(), c = counts[j].item<double>();
    INFO("token " << j << ": p " << pj << ", count " << c);
    CHECK(std::abs(c - n * pj) <= 5 * std::sqrt(n * pj * (1 - pj)) + 1e-9);
  }
}
