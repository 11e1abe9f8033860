// Mismatch correction (algo/mismatch.h) against the independent Python reference tests/golden/mismatch_reference.py:
// truncated and masked importance weights at token level and per sequence (geometric mean and product), through
// GSPO, GSPO-token and GRPO. Tolerances as the loss golden test: float64 1e-9 relative, float32 1e-5 relative + 1e-7
// absolute on loss and gradient (every position; exactly 0 where the mask is 0); clip and kept-token counts exact
// (every decision is checked to sit more than 1e-5 in log space from its threshold first, so float32 rounding cannot
// flip it). The "holes_" cases have masks with interior runs of zeros (tool observations between the policy's turns)
// and garbage log-probs there. The mismatch metrics' sums (mismatch_stats): counts exact, sums and extrema 1e-5
// relative in float32 (1e-9 in float64).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>

#include "gspo/algo/loss.h"
#include "gspo/algo/mismatch.h"
#include "helpers.h"

using namespace gspo;
using json = nlohmann::json;

namespace {

torch::Tensor mat(const json& j, torch::Dtype dtype) {
  std::vector<double> flat;
  int64_t rows = 0, cols = 0;
  for (const auto& row : j) {
    ++rows;
    cols = static_cast<int64_t>(row.size());
    for (const auto& v : row) flat.push_back(v.get<double>());
  }
  return torch::tensor(flat, torch::kDouble).view({rows, cols}).to(dtype);
}

json load_cases() {
  std::ifstream in(test::model_path("mismatch_cases.json"));
  REQUIRE(in.good());
  return json::parse(in)["cases"];
}

algo::IsOptions is_options(const json& c) {
  algo::IsOptions o;
  o.mode = test::parse<config::IsCorrection>(c["is_mode"]);
  o.level = test::parse<config::IsLevel>(c["is_level"]);
  o.cap = c["is_cap"];
  o.floor = c["is_floor"];
  return o;
}

// Smallest distance in log space from a weight to the thresholds its mode compares it with.
double threshold_margin(const json& c) {
  std::vector<double> lws;
  for (const auto& x : c["log_weights"]) {
    if (x.is_array()) {
      for (const auto& y : x)
        if (!y.is_null()) lws.push_back(y);
    } else {
      lws.push_back(x);
    }
  }
  double m = 1e9;
  for (double lw : lws) {
    m = std::min(m, std::abs(lw - std::log(c["is_cap"].get<double>())));
    if (c["is_mode"] == "mis") m = std::min(m, std::abs(lw - std::log(c["is_floor"].get<double>())));
  }
  return m;
}

}  // namespace

TEST_CASE("mismatch correction matches the Python reference: loss, gradient, clip and kept counts", "[algo][golden]") {
  const auto cases = load_cases();
  REQUIRE(cases.size() >= 32);
  std::set<std::string> holes;  // every loss kind, mode and level has a case with holes in its mask
  for (const auto& c : cases)
    if (c["name"].get<std::string>().rfind("holes_", 0) == 0)
      holes.insert(c["kind"].get<std::string>() + "/" + c["is_mode"].get<std::string>() + "/" +
                   c["is_level"].get<std::string>());
  CHECK(holes.size() == 3 * 2 * 3);
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    const double rel = dtype == torch::kDouble ? 1e-9 : 1e-5;
    const double abs_tol = dtype == torch::kDouble ? 1e-12 : 1e-7;
    for (const auto& c : cases) {
      INFO(c["name"].get<std::string>() << (dtype == torch::kDouble ? " float64" : " float32"));
      REQUIRE(threshold_margin(c) > 1e-5);
      algo::LossInputs in;
      in.logprobs = mat(c["logprobs"], dtype).requires_grad_(true);
      in.old_logprobs = mat(c["old_logprobs"], dtype);
      in.mask = mat(c["mask"], dtype);
      in.advantages = torch::tensor(c["advantages"].get<std::vector<double>>(), torch::kDouble).to(dtype);
      const auto sampler = mat(c["sampler_logprobs"], dtype);
      in.is = algo::importance_weights(in.old_logprobs, sampler, in.mask, is_options(c));
      algo::LossOptions o;
      o.kind = test::parse<config::LossKind>(c["kind"]);
      o.clip_low = c["clip_low"];
      o.clip_high = c["clip_high"];
      o.log_ratio_clamp = c["log_ratio_clamp"];
      auto res = algo::policy_loss(in, o);
      res.loss.backward();
      CHECK(res.loss.item<double>() == Approx(c["loss"].get<double>()).epsilon(rel).margin(abs_tol));
      auto grad = in.logprobs.grad().to(torch::kDouble);  // every position, masked ones included
      auto want = mat(c["grad"], torch::kDouble);
      CHECK((grad - want).abs().max().item<double>() <= rel * want.abs().max().item<double>() + abs_tol);
      CHECK(grad.masked_select(in.mask == 0).abs().sum().item<double>() == 0.0);  // exactly none reaches them
      const auto& s = c["stats"];
      CHECK(res.stats.seq_clipped_low == s["seq_clipped_low"].get<double>());
      CHECK(res.stats.seq_clipped_high == s["seq_clipped_high"].get<double>());
      CHECK(res.stats.tok_clipped_low == s["tok_clipped_low"].get<double>());
      CHECK(res.stats.tok_clipped_high == s["tok_clipped_high"].get<double>());
      CHECK(res.stats.tokens == c["kept_tokens"].get<double>());

      const auto& w = c["mismatch_stats"];
      const auto ms = algo::mismatch_stats(in.old_logprobs, sampler, in.mask, is_options(c));
      CHECK(ms.tokens == w["tokens"].get<double>());
      CHECK(ms.sequences == static_cast<double>(in.mask.size(0)));
      CHECK(ms.diff_sum == Approx(w["diff_sum"].get<double>()).epsilon(rel).margin(abs_tol * 10));
      CHECK(ms.diff_abs_max == Approx(w["diff_abs_max"].get<double>()).epsilon(rel));
      CHECK(ms.weight_sum == Approx(w["weight_sum"].get<double>()).epsilon(rel));
      CHECK(ms.weight_count == w["weight_count"].get<double>());
      CHECK(ms.weight_min == Approx(w["weight_min"].get<double>()).epsilon(rel));
      CHECK(ms.weight_max == Approx(w["weight_max"].get<double>()).epsilon(rel));
      CHECK(ms.truncated == w["truncated"].get<double>());
      CHECK(ms.rejected == w["rejected"].get<double>());
    }
  }
}

TEST_CASE("importance weights: truncation caps, masking rejects outside [floor, cap], padding never counts", "[algo]") {
  auto mask = torch::tensor({1.0, 1.0, 1.0, 0.0}).view({1, 4});
  auto sampler = torch::zeros({1, 4}, torch::kDouble);
  auto train = torch::tensor({std::log(3.0), std::log(1.5), std::log(0.25), 50.0}, torch::kDouble).view({1, 4});
  algo::IsOptions o;
  o.mode = algo::IsCorrection::kTis;
  auto tis = algo::importance_weights(train, sampler, mask, o);
  CHECK(tis.weight[0][0].item<double>() == Approx(2.0));   // capped
  CHECK(tis.weight[0][1].item<double>() == Approx(1.5));
  CHECK(tis.weight[0][2].item<double>() == Approx(0.25));  // tis keeps small weights as they are
  CHECK(tis.weight[0][3].item<double>() == 0.0);           // padding
  o.mode = algo::IsCorrection::kMis;
  auto mis = algo::importance_weights(train, sampler, mask, o);
  CHECK_FALSE(mis.keep[0][0].item<bool>());
  CHECK(mis.keep[0][1].item<bool>());
  CHECK_FALSE(mis.keep[0][2].item<bool>());
  CHECK_FALSE(mis.keep[0][3].item<bool>());
  CHECK(mis.weight[0][1].item<double>() == Approx(1.5));
  o.level = algo::IsLevel::kSequenceGeometric;  // exp(mean(log 3, log 1.5, log 0.25)) = 1.125^(1/3)
  auto geo = algo::importance_weights(train, sampler, mask, o);
  CHECK(geo.weight[0].item<double>() == Approx(std::cbrt(1.125)));
  o.level = algo::IsLevel::kSequenceProduct;  // 3 * 1.5 * 0.25 = 1.125
  auto prod = algo::importance_weights(train, sampler, mask, o);
  CHECK(prod.weight[0].item<double>() == Approx(1.125));

  auto st = algo::mismatch_stats(train, sampler, mask, o);
  CHECK(st.tokens == 3);
  CHECK(st.diff_sum == Approx(std::log(1.125)));
  CHECK(st.diff_abs_max == Approx(std::log(4.0)));
  CHECK(st.weight_count == 1);  // one sequence at sequence level
  CHECK(st.weight_sum == Approx(1.125));
  CHECK(st.rejected == 0);
}
