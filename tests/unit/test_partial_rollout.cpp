// Partial rollouts in the sampler (rollout::CallPlan): a call that stops once enough whole groups have ended, and a
// later call that continues its unfinished rows (prefilled again, prompt and response so far) with each row's own
// noise hash. Stopped + continued must sample what one uninterrupted call samples. The two differ in batch shapes and
// in prefill-versus-decode arithmetic, so they are compared with sample_compare.h's rule (log-probs within
// kLogprobTol, a token flip only at a near-edge draw), never bitwise.
#include <catch2/catch.hpp>

#include "contract_helpers.h"
#include "gspo/core/error.h"
#include "gspo/rollout/sampler.h"
#include "helpers.h"
#include "sample_compare.h"

using namespace gspo;

namespace {

struct Fixture {
  model::Policy policy = test::load_tiny("tiny_prior.pt");  // emits EOS often: long-tailed response lengths
  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::from_spec(policy.tokenizer_json(), "tiny_prior.pt");
  std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("12+7="), tok->encode_prompt("Hello, w"),
                                            tok->encode_prompt("a"), tok->encode_prompt("xyz")};
  rollout::SamplingParams params{1.0, 1.0, 0, 40, {}};
  const int64_t G = 4;
  const rollout::NoiseKey key{11, 0};

  int64_t rows() const { return static_cast<int64_t>(prompts.size()) * G; }
  int64_t row_bytes() {
    int64_t P = 0;
    for (const auto& p : prompts) P = std::max<int64_t>(P, p.size());
    return policy.init_cache(1, P + params.max_new_tokens).nbytes();
  }
  // A plan of fresh rows drawing `key`'s noise.
  rollout::CallPlan fresh(int64_t stop_after) const {
    rollout::CallPlan plan;
    for (int64_t r = 0; r < rows(); ++r)
      plan.rows.push_back({{}, {}, rollout::Finish::kCarried, rollout::row_hash(key, r)});
    plan.stop_after_groups = stop_after;
    return plan;
  }
};

// The plan that continues every row of `b` (its ended rows passed through), with the noise of `from`.
rollout::CallPlan continuing(const rollout::RolloutBatch& b, const rollout::CallPlan& from) {
  rollout::CallPlan plan;
  auto lp = b.behaviour_logprobs.accessor<float, 2>();
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    rollout::RowSoFar row{b.response_ids[r], {}, b.finish[r], from.rows[r].noise};
    for (size_t t = 0; t < row.ids.size(); ++t) row.logprobs.push_back(lp[r][t]);
    plan.rows.push_back(std::move(row));
  }
  return plan;
}

// Rows of `b` that are the same rows of `base` (or, carried, a prefix of them), up to near-ties; most must agree.
void agrees(model::Policy& policy, const rollout::RolloutBatch& base, const rollout::RolloutBatch& b,
            const rollout::NoiseKey& key) {
  REQUIRE(b.num_rows() == base.num_rows());
  auto margin = test::cdf_margins(policy, base, key, 1.0, 0);
  auto la = base.behaviour_logprobs.accessor<float, 2>();
  auto lb = b.behaviour_logprobs.accessor<float, 2>();
  int64_t agreed = 0;
  for (int64_t r = 0; r < base.num_rows(); ++r) {
    if (b.finish[r] != rollout::Finish::kCarried) {
      agreed += test::same_row(base, r, b, r, margin);
      continue;
    }
    INFO("carried row " << r);
    const auto& x = base.response_ids[r];
    const auto& y = b.response_ids[r];
    CHECK(y.size() < x.size() + 1);
    bool same = true;
    for (size_t t = 0; t < std::min(x.size(), y.size()) && same; ++t) {
      if (x[t] != y[t]) {
        CHECK(margin.accessor<double, 2>()[r][t] < test::kFlipMargin);
        same = false;
        continue;
      }
      CHECK(std::abs(la[r][t] - lb[r][t]) <= test::kLogprobTol);
    }
    agreed += same;
  }
  CHECK(agreed * 4 > base.num_rows() * 3);
}

}  // namespace

TEST_CASE("a call stopped once a group has ended, continued by a second call, samples the uninterrupted call",
          "[rollout][partial]") {
  Fixture f;
  for (int64_t slots : {0, 3, 6})
  for (bool stops : {false, true}) {
    INFO("KV budget of " << slots << " rows (0: none), stop strings and min_new_tokens " << stops);
    auto p = f.params;
    p.kv_cache_bytes = slots * f.row_bytes();
    if (stops) p.stop = {"1", "e"}, p.min_new_tokens = 5;  // matched across the cut: the text so far is carried
    rollout::Sampler sampler(f.policy, *f.tok, p);
    auto base = sampler.generate(f.prompts, f.G, f.key);
    const auto base_stats = sampler.last_stats();

    const auto first_plan = f.fresh(1);
    auto first = sampler.generate(f.prompts, f.G, f.key, first_plan);
    const auto st1 = sampler.last_stats();
    // It stopped early: at least one whole group ended, and rows are carried (running, or never given a slot).
    int64_t whole = 0, carried = 0;
    for (int64_t g = 0; g < static_cast<int64_t>(f.prompts.size()); ++g) {
      bool all = true;
      for (int64_t j = 0; j < f.G; ++j) all = all && first.finish[g * f.G + j] != rollout::Finish::kCarried;
      whole += all;
    }
    for (auto fin : first.finish) carried += fin == rollout::Finish::kCarried;
    CHECK(whole >= 1);
    CHECK(carried > 0);
    CHECK(st1.carried_rows == carried);
    CHECK(st1.decode_steps < base_stats.decode_steps);
    agrees(f.policy, base, first, f.key);

    auto plan = continuing(first, first_plan);
    auto second = sampler.generate(f.prompts, f.G, f.key, plan);
    const auto st2 = sampler.last_stats();
    for (auto fin : second.finish) CHECK(fin != rollout::Finish::kCarried);
    int64_t resumed = 0, resumed_tokens = 0;
    for (int64_t r = 0; r < f.rows(); ++r)
      if (first.finish[r] == rollout::Finish::kCarried && !first.response_ids[r].empty())
        ++resumed, resumed_tokens += static_cast<int64_t>(first.response_ids[r].size());
    CHECK(st2.continued_rows == resumed);
    CHECK(st2.continued_tokens == resumed_tokens);
    // Only the continuation's own tokens count as the second call's work.
    // Only the continuation's own tokens count as the second call's work (the rows so far were the first call's).
    CHECK(st2.busy_slot_steps == second.generated_tokens() - first.generated_tokens());
    agrees(f.policy, base, second, f.key);
  }
}

TEST_CASE("a carried group continues beside fresh groups of another key, each drawing its own noise",
          "[rollout][partial]") {
  Fixture f;
  rollout::Sampler sampler(f.policy, *f.tok, f.params);
  // Call 1 samples prompts 0-1 and stops after one group; call 2 takes the carried group with two new prompts (2, 3)
  // keyed by another call's noise. Each row must be what an uninterrupted call of its own key samples.
  const std::vector<std::vector<int64_t>> old_prompts(f.prompts.begin(), f.prompts.begin() + 2);
  const rollout::NoiseKey old_key{21, 0}, new_key{22, 0};
  rollout::CallPlan p1;
  for (int64_t r = 0; r < 2 * f.G; ++r)
    p1.rows.push_back({{}, {}, rollout::Finish::kCarried, rollout::row_hash(old_key, r)});
  p1.stop_after_groups = 1;
  auto first = sampler.generate(old_prompts, f.G, old_key, p1);
  auto carried_plan = continuing(first, p1);

  rollout::CallPlan p2;
  std::vector<std::vector<int64_t>> prompts2;
  std::vector<int64_t> old_group;  // the groups of call 1 that call 2 continues
  for (int64_t g = 0; g < 2; ++g) {
    bool open = false;
    for (int64_t j = 0; j < f.G; ++j) open = open || first.finish[g * f.G + j] == rollout::Finish::kCarried;
    if (!open) continue;
    old_group.push_back(g);
    prompts2.push_back(old_prompts[g]);
    for (int64_t j = 0; j < f.G; ++j) p2.rows.push_back(carried_plan.rows[g * f.G + j]);
  }
  REQUIRE(old_group.size() == 1);
  for (int64_t g = 2; g < 4; ++g) {
    prompts2.push_back(f.prompts[g]);
    for (int64_t j = 0; j < f.G; ++j)
      p2.rows.push_back({{}, {}, rollout::Finish::kCarried, rollout::row_hash(new_key, (g - 2) * f.G + j)});
  }
  p2.must_finish = {1, 0, 0};  // the carried group may not wait for a third call
  p2.stop_after_groups = 1;
  auto second = sampler.generate(prompts2, f.G, new_key, p2);
  for (int64_t j = 0; j < f.G; ++j) CHECK(second.finish[j] != rollout::Finish::kCarried);

  // References: each key's prompts sampled in one uninterrupted call.
  auto old_base = sampler.generate(old_prompts, f.G, old_key);
  auto new_base = sampler.generate({f.prompts[2], f.prompts[3]}, f.G, new_key);
  auto old_margin = test::cdf_margins(f.policy, old_base, old_key, 1.0, 0);
  auto new_margin = test::cdf_margins(f.policy, new_base, new_key, 1.0, 0);
  int64_t agreed = 0, compared = 0;
  for (int64_t j = 0; j < f.G; ++j, ++compared)
    agreed += test::same_row(old_base, old_group[0] * f.G + j, second, j, old_margin);
  for (int64_t r = 0; r < 2 * f.G; ++r) {
    if (second.finish[f.G + r] == rollout::Finish::kCarried) continue;  // (stopped: compared as prefixes above)
    ++compared;
    agreed += test::same_row(new_base, r, second, f.G + r, new_margin);
  }
  CHECK(agreed * 4 > compared * 3);
}

TEST_CASE("a call plan that cannot be continued is refused", "[rollout][partial]") {
  Fixture f;
  rollout::Sampler sampler(f.policy, *f.tok, f.params);
  auto plan = f.fresh(0);
  plan.rows.pop_back();
  CHECK_THROWS_AS(sampler.generate(f.prompts, f.G, f.key, plan), std::invalid_argument);
  plan = f.fresh(0);
  plan.rows[0].ids.assign(f.params.max_new_tokens, 5);
  plan.rows[0].logprobs.assign(f.params.max_new_tokens, -1.0f);
  CHECK_THROWS_AS(sampler.generate(f.prompts, f.G, f.key, plan), std::invalid_argument);

  auto flat = test::load_tiny("tiny_without_layers.pt");
  REQUIRE_FALSE(flat.has_slots());
  auto tok = tokenizer::from_spec(flat.tokenizer_json(), "tiny.pt");
  rollout::Sampler no_slots(flat, *tok, f.params);
  CHECK_THROWS_AS(no_slots.generate(f.prompts, f.G, f.key, f.fresh(0)), ConfigError);
}
