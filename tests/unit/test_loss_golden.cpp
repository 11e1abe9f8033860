// Losses and advantages against tests/golden/loss_reference.py (independent per-sequence Python loops).
// Tolerances: float64 inputs 1e-9 relative; float32 inputs 1e-5 relative + 1e-7 absolute; clip counts exact, because
// every clip decision lies at least kClipMargin from a clip bound (checked), so neither precision can flip one.
// The gradient is compared at every position, and is exactly 0 where the mask is 0. The "holes_" cases have masks
// with interior runs of zeros (tool observations between the policy's turns) and garbage at the masked positions.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <string>

#include "gspo/algo/advantage.h"
#include "gspo/algo/loss.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::json;

namespace {
json load_cases() {
  std::ifstream in(test::model_path("loss_cases.json"));
  REQUIRE(in);
  return json::parse(in);
}

torch::Tensor mat(const json& j, torch::ScalarType t) {
  auto rows = j.get<std::vector<std::vector<double>>>();
  std::vector<double> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat, torch::kDouble).view({static_cast<int64_t>(rows.size()), -1}).to(t);
}

torch::Tensor adv_of(const json& j, torch::ScalarType t) {
  if (j[0].is_array()) return mat(j, t);
  return torch::tensor(j.get<std::vector<double>>(), torch::kDouble).to(t);
}

// Float32 rounding of inputs near -3 is 2.4e-7, so a log-ratio carries < 1e-6 of error; 1e-5 leaves 10x.
constexpr double kClipMargin = 1e-5;

// Smallest distance, in log-ratio, from a clip decision of case c to a clip bound log(1 - clip_low) or
// log(1 + clip_high): the sequence log-ratio for GSPO and GSPO-token, each token's for GRPO, clamped like the loss.
double clip_margin(const json& c, const torch::Tensor& lp, const torch::Tensor& old, const torch::Tensor& mask) {
  auto m = mask.to(torch::kDouble);
  auto lr = (lp.detach() - old).to(torch::kDouble) * m;  // subtracted in the inputs' precision, as the loss does
  const bool per_token = c["kind"].get<std::string>() == "grpo";
  auto x = per_token ? lr : lr.sum(1) / m.sum(1);
  const double clamp = c["log_ratio_clamp"];
  if (clamp > 0) x = x.clamp_max(clamp);
  const double lo = std::log(1 - c["clip_low"].get<double>()), hi = std::log1p(c["clip_high"].get<double>());
  auto d = torch::minimum((x - lo).abs(), (x - hi).abs());
  if (per_token) d = d.masked_fill(m == 0, std::numeric_limits<double>::infinity());
  return d.min().item<double>();
}

algo::LossOptions options_of(const json& c) {
  algo::LossOptions o;
  o.kind = test::parse<config::LossKind>(c["kind"]);
  o.clip_low = c["clip_low"];
  o.clip_high = c["clip_high"];
  o.log_ratio_clamp = c["log_ratio_clamp"];
  o.kl_coef = c["kl_coef"];
  o.kl_estimator = test::parse<config::KlEstimator>(c["kl_estimator"]);
  return o;
}
}  // namespace

TEST_CASE("policy losses match the Python reference: loss, gradient, clip counts, KL", "[algo][golden]") {
  auto cases = load_cases()["losses"];
  // The masks with holes cover every loss kind without KL and with each estimator.
  std::set<std::string> holes;
  for (const auto& c : cases) {
    const auto name = c["name"].get<std::string>();
    if (name.rfind("holes_", 0) != 0) continue;
    holes.insert(c["kind"].get<std::string>() + "/" + (c["kl_coef"].get<double>() > 0 ? c["kl_estimator"].get<std::string>() : "none"));
  }
  for (const char* kind : {"gspo", "gspo_token", "grpo"})
    for (const char* kl : {"none", "k1", "k3"}) CHECK(holes.count(std::string(kind) + "/" + kl) == 1);
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    const double rel = dtype == torch::kDouble ? 1e-9 : 1e-5;
    const double abs_tol = dtype == torch::kDouble ? 1e-12 : 1e-7;
    for (const auto& c : cases) {
      INFO(c["name"].get<std::string>() << (dtype == torch::kDouble ? " float64" : " float32"));
      algo::LossInputs in;
      in.logprobs = mat(c["logprobs"], dtype).requires_grad_(true);
      in.old_logprobs = mat(c["old_logprobs"], dtype);
      in.mask = mat(c["mask"], dtype);
      in.advantages = adv_of(c["advantages"], dtype);
      in.ref_logprobs = mat(c["ref_logprobs"], dtype);
      auto res = algo::policy_loss(in, options_of(c));
      res.loss.backward();
      const double want = c["loss"];
      CHECK(res.loss.item<double>() == Approx(want).epsilon(rel).margin(abs_tol));
      auto grad = in.logprobs.grad().to(torch::kDouble);  // every position, masked ones included
      auto want_grad = mat(c["grad"], torch::kDouble);
      auto err = (grad - want_grad).abs().max().item<double>();
      CHECK(err <= rel * want_grad.abs().max().item<double>() + abs_tol);
      CHECK(grad.masked_select(in.mask == 0).abs().sum().item<double>() == 0.0);  // exactly none reaches them
      const auto& s = c["stats"];
      CHECK(clip_margin(c, in.logprobs, in.old_logprobs, in.mask) > kClipMargin);
      CHECK(res.stats.seq_clipped_low == s["seq_clipped_low"].get<double>());
      CHECK(res.stats.seq_clipped_high == s["seq_clipped_high"].get<double>());
      CHECK(res.stats.tok_clipped_low == s["tok_clipped_low"].get<double>());
      CHECK(res.stats.tok_clipped_high == s["tok_clipped_high"].get<double>());
      if (!c["kl_sum"].is_null()) {
        CHECK(res.stats.kl_sum == Approx(c["kl_sum"].get<double>()).epsilon(rel * 10));
        CHECK(res.stats.kl_seq_sum == Approx(c["kl_seq_sum"].get<double>()).epsilon(rel * 10));
      }
      CHECK(res.stats.seq_ratio_sum == Approx(c["seq_ratio_sum"].get<double>()).epsilon(rel));
      CHECK(res.stats.tokens == in.mask.sum().item<double>());  // a count: exact
    }
  }
}

TEST_CASE("GSPO-token's loss and gradient equal GSPO's when advantages are per sequence", "[algo]") {
  torch::manual_seed(4);
  const int64_t N = 6, T = 9;
  auto old = -torch::rand({N, T}) * 4;
  auto mask = torch::zeros({N, T});
  const int lens[N] = {9, 1, 4, 7, 2, 9};
  for (int i = 0; i < N; ++i) mask[i].narrow(0, 0, lens[i]).fill_(1);
  auto shift = torch::tensor({8e-4, -8e-4, 1e-4, 5e-4, -2e-4, 0.0}).unsqueeze(1);
  auto lp = old + shift + (torch::rand({N, T}) - 0.5) * 1e-4;
  auto adv = torch::tensor({1.0, -1.0, 0.5, -0.5, 2.0, 0.0});
  algo::LossOptions o;
  auto run = [&](algo::LossKind k) {
    auto x = lp.clone().requires_grad_(true);
    o.kind = k;
    auto r = algo::policy_loss({x, old, mask, adv, {}, {}, {}, {}}, o);
    r.loss.backward();
    return std::make_pair(r, x.grad() * mask);
  };
  auto [gspo, g1] = run(algo::LossKind::kGspo);
  auto [tok, g2] = run(algo::LossKind::kGspoToken);
  CHECK(gspo.loss.item<double>() == Approx(tok.loss.item<double>()).epsilon(1e-6));
  CHECK((g1 - g2).abs().max().item<double>() < 1e-8);
  // Both kinds clip the same float32 sequence ratio (GSPO-token's is s_i * exp(0) = s_i exactly): equal counts.
  CHECK(gspo.stats.seq_clipped_low == tok.stats.seq_clipped_low);
  CHECK(gspo.stats.seq_clipped_high == tok.stats.seq_clipped_high);
  CHECK(gspo.stats.seq_clipped_low + gspo.stats.seq_clipped_high >= 2);  // both sides exercised
}

TEST_CASE("GSPO weights every token of a response equally: GRPO's loss is not token-count weighted", "[algo]") {
  // At ratio 1 the GSPO gradient w.r.t. each token's log-prob is -A_i / (N |y_i|).
  auto old = torch::full({2, 4}, -1.0);
  auto mask = torch::tensor({{1., 1., 1., 1.}, {1., 0., 0., 0.}});
  auto adv = torch::tensor({1.0, -2.0});
  for (auto kind : {algo::LossKind::kGspo, algo::LossKind::kGrpo}) {
    auto lp = old.clone().requires_grad_(true);
    algo::LossOptions o;
    o.kind = kind;
    auto r = algo::policy_loss({lp, old, mask, adv, {}, {}, {}, {}}, o);
    r.loss.backward();
    auto g = lp.grad();
    CHECK(g[0][0].item<double>() == Approx(-1.0 / (2 * 4)));
    CHECK(g[0][3].item<double>() == Approx(-1.0 / (2 * 4)));
    CHECK(g[1][0].item<double>() == Approx(2.0 / (2 * 1)));
    CHECK(g[1][1].item<double>() == 0.0);  // a masked token: exactly no gradient
    CHECK(r.stats.seq_ratio_sum == Approx(2.0));
  }
}

TEST_CASE("advantages match the reference for every kind and std", "[algo][golden]") {
  const json cases = load_cases()["advantages"];
  REQUIRE(cases.size() == 6);
  for (const auto& c : cases) {
    INFO(c["kind"].get<std::string>() << " sample_std=" << c["sample_std"].get<bool>());
    algo::AdvantageOptions o;
    o.kind = test::parse<config::AdvantageKind>(c["kind"]);
    o.sample_std = c["sample_std"];
    o.eps = c["eps"];
    auto rewards = torch::tensor(c["rewards"].get<std::vector<double>>(), torch::kFloat);
    auto a = algo::group_advantages(rewards, c["group_size"], o);
    auto want = c["advantages"].get<std::vector<double>>();
    for (size_t i = 0; i < want.size(); ++i) CHECK(a.values[i].item<double>() == Approx(want[i]).margin(1e-6));
    CHECK(a.num_zero_variance == c["zero_variance"].get<int64_t>());
    // The zero-variance group (second) is exactly zero (masked to 0, not computed).
    CHECK(a.values.narrow(0, 4, 4).abs().sum().item<double>() == 0.0);
  }
}

TEST_CASE("scale_rewards batch and none match the reference (as TRL's scale_rewards)", "[algo][golden]") {
  const json cases = load_cases()["scaled_advantages"];
  REQUIRE(cases.size() == 4);
  for (const auto& c : cases) {
    INFO(c["scale"].get<std::string>() << " sample_std=" << c["sample_std"].get<bool>());
    algo::AdvantageOptions o;
    o.sample_std = c["sample_std"];
    o.eps = c["eps"];
    o.scale = test::parse<config::RewardScale>(c["scale"]);
    auto rewards = torch::tensor(c["rewards"].get<std::vector<double>>(), torch::kDouble);
    o.batch_std = algo::batch_std_of(rewards, o.sample_std);
    CHECK(o.batch_std == Approx(c["batch_std"].get<double>()).epsilon(1e-12));
    auto a = algo::group_advantages(rewards, c["group_size"], o);
    auto want = c["advantages"].get<std::vector<double>>();
    for (size_t i = 0; i < want.size(); ++i) CHECK(a.values[i].item<double>() == Approx(want[i]).margin(1e-6));
  }
}

TEST_CASE("component_norm before_sum: the weighted sum of each component's advantages, as the reference", "[algo][golden]") {
  const json cases = load_cases()["component_advantages"];
  REQUIRE(cases.size() == 1);
  for (const auto& c : cases) {
    std::vector<torch::Tensor> comps;
    for (const auto& col : c["components"]) comps.push_back(torch::tensor(col.get<std::vector<double>>(), torch::kDouble));
    algo::AdvantageOptions o;
    o.eps = c["eps"];
    auto rewards = torch::tensor(c["rewards"].get<std::vector<double>>(), torch::kDouble);
    auto a = algo::component_advantages(comps, c["weights"].get<std::vector<double>>(), rewards, c["group_size"], o);
    auto want = c["advantages"].get<std::vector<double>>();
    for (size_t i = 0; i < want.size(); ++i) CHECK(a.values[i].item<double>() == Approx(want[i]).margin(1e-6));
    // The second group's summed rewards are all equal (1.1): its advantages are exactly zero.
    CHECK(a.values.narrow(0, 4, 4).abs().sum().item<double>() == 0.0);
  }
}
