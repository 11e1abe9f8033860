// rollout.min_new_tokens: EOS is never drawn and stop strings are not checked before a response has k tokens;
// the recorded log-probs stay the unmasked policy's; 0 leaves sampling as it was; the eval's setting inherits.
#include <catch2/catch.hpp>

#include <numeric>

#include "gspo/config/load.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/rollout/sampler.h"
#include "helpers.h"

using namespace gspo;

namespace {
struct Fixture {
  model::Policy prior = test::load_tiny("tiny_prior.pt");  // emits EOS often: responses end early without the option
  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::from_spec(prior.tokenizer_json(), "tiny_prior.pt");
  std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("12+7="), tok->encode_prompt("Hello, w"),
                                            tok->encode_prompt("a")};
  rollout::RolloutBatch run(model::Policy& p, rollout::SamplingParams sp, int64_t G, uint64_t seed) {
    rollout::Sampler s(p, *tok, sp);
    return s.generate(prompts, G, {seed, 0});
  }
};

// Index of the first EOS in a row's response, or its length when there is none.
size_t first_eos(const std::vector<int64_t>& ids, int64_t eos) {
  return static_cast<size_t>(std::find(ids.begin(), ids.end(), eos) - ids.begin());
}
}  // namespace

TEST_CASE("a banned token is never drawn: the others keep their renormalised odds: log-probs stay unmasked",
          "[rollout][min_new_tokens]") {
  // Token 0 plays EOS and is by far the most likely.
  const std::vector<double> lv = {4.0, 1.0, 0.5, 0.0, -1.0};
  auto logits = torch::tensor(lv, torch::kFloat).view({1, -1});
  const int draws = 20000;
  auto many = logits.expand({draws, 5}).contiguous();
  std::vector<int64_t> rows(draws);
  std::iota(rows.begin(), rows.end(), 0);
  auto u = rollout::row_uniforms({21, 0}, rows, 0);
  struct Case { int64_t k; double p; std::vector<double> kept; };  // kept: the tokens top-k/top-p leave (after the ban)
  for (const auto& c : {Case{0, 1.0, {1, 2, 3, 4}}, Case{2, 1.0, {1, 2}}, Case{0, 0.6, {1, 2}}}) {
    INFO("top_k " << c.k << " top_p " << c.p);
    rollout::SamplingParams sp{1.0, c.p, c.k, 1, {}};
    auto d = rollout::sample_next(many, sp, u, /*banned=*/0);
    auto counts = torch::bincount(d.tokens, {}, 5);
    CHECK(counts[0].item<int64_t>() == 0);
    // Independent reference: softmax over the kept tokens only (top-k/top-p act on the distribution without EOS, as
    // transformers' min_new_tokens processor runs before its warpers). Within 5 binomial standard deviations.
    double z = 0;
    for (double id : c.kept) z += std::exp(lv[static_cast<size_t>(id)]);
    for (int v = 1; v < 5; ++v) {
      const bool kept = std::find(c.kept.begin(), c.kept.end(), v) != c.kept.end();
      const double ref = kept ? std::exp(lv[v]) / z : 0.0;
      const double freq = counts[v].item<double>() / draws;
      INFO("token " << v << " reference " << ref << " frequency " << freq);
      CHECK(std::abs(freq - ref) < 5 * std::sqrt(ref * (1 - ref) / draws) + 1e-9);
    }
    // The recorded log-prob is the unmasked log-softmax (EOS's mass still in the normaliser): what training recomputes.
    auto expect = logits.log_softmax(-1)[0].index_select(0, d.tokens);
    CHECK((expect - d.logprobs).abs().max().item<double>() < 1e-6);
  }
  rollout::SamplingParams greedy{0.0, 1.0, 0, 1, {}};
  CHECK(rollout::sample_next(logits, greedy, u.narrow(0, 0, 1), 0).tokens.item<int64_t>() == 1);
  CHECK(rollout::sample_next(logits, greedy, u.narrow(0, 0, 1)).tokens.item<int64_t>() == 0);
}

TEST_CASE("min_new_tokens k: no response ends before k tokens and EOS never comes before position k",
          "[rollout][min_new_tokens]") {
  Fixture f;
  const int64_t k = 12, R = 24, eos = f.tok->eos_id();
  rollout::SamplingParams off{1.0, 1.0, 0, R, {}}, on = off;
  on.min_new_tokens = k;
  auto before = f.run(f.prior, off, 8, 4);
  auto after = f.run(f.prior, on, 8, 4);
  // Without the option responses do end early, so the checks below can fail.
  int64_t short_rows = 0;
  for (int64_t r = 0; r < before.num_rows(); ++r) short_rows += before.response_lengths[r] < k;
  INFO(short_rows << " of " << before.num_rows() << " rows shorter than " << k << " without min_new_tokens");
  REQUIRE(short_rows > 0);
  int64_t eos_after_k = 0;
  for (int64_t r = 0; r < after.num_rows(); ++r) {
    INFO("row " << r << ", " << after.response_lengths[r] << " tokens, " << rollout::finish_name(after.finish[r]));
    CHECK(after.response_lengths[r] >= k);
    CHECK(first_eos(after.response_ids[r], eos) >= static_cast<size_t>(k));
    if (after.finish[r] == rollout::Finish::kEos) {
      CHECK(after.response_lengths[r] > k);  // EOS is the (k + 1)-th token at the earliest
      ++eos_after_k;
    }
  }
  CHECK(eos_after_k > 0);  // EOS still ends responses once they are k tokens long
  // The behaviour log-probs are the unmasked policy's at the sampling temperature (a full forward; tol 1e-4 as in
  // test_sampling.cpp), also at the positions where EOS was masked.
  auto lp = test::response_logprobs(f.prior, after.input_ids, after.attention_mask, after.prompt_len, 1.0);
  CHECK(((lp - after.behaviour_logprobs) * after.response_mask).abs().max().item<double>() < 1e-4);
}

TEST_CASE("min_new_tokens = max_new_tokens gives every response exactly that length", "[rollout][min_new_tokens]") {
  Fixture f;
  for (double temp : {1.0, 0.0}) {
    INFO("temperature " << temp);
    rollout::SamplingParams sp{temp, 0.9, 0, 10, {}};
    sp.min_new_tokens = 10;
    auto b = f.run(f.prior, sp, 4, 9);
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      CHECK(b.response_lengths[r] == 10);
      CHECK(b.finish[r] == rollout::Finish::kLength);
    }
  }
}

TEST_CASE("min_new_tokens 0 samples exactly what the sampler did without it", "[rollout][min_new_tokens]") {
  Fixture f;
  rollout::SamplingParams plain{1.0, 1.0, 0, 24, {}}, zero = plain;
  zero.min_new_tokens = 0;
  auto a = f.run(f.prior, plain, 8, 4);
  auto b = f.run(f.prior, zero, 8, 4);
  // Same shapes and code path on one machine: bitwise.
  CHECK(a.response_ids == b.response_ids);
  CHECK(torch::equal(a.behaviour_logprobs, b.behaviour_logprobs));
  // And sample_next without a ban is unchanged by the new argument's default.
  auto logits = torch::randn({64, 259}, torch::TensorOptions().dtype(torch::kFloat));
  std::vector<int64_t> rows(64);
  std::iota(rows.begin(), rows.end(), 0);
  auto u = rollout::row_uniforms({5, 0}, rows, 3);
  CHECK(torch::equal(rollout::sample_next(logits, plain, u).tokens, rollout::sample_next(logits, plain, u, -1).tokens));
}

TEST_CASE("stop strings: a match completed before min_new_tokens is ignored, one completed at it ends the row",
          "[rollout][min_new_tokens][stop]") {
  Fixture f;
  auto tiny = test::load_tiny();
  // Greedy on tiny.pt runs to the length cap without EOS (test_sampling.cpp), so masking EOS leaves its tokens as
  // they are and only the stop rule decides where each variant ends.
  auto full = f.run(tiny, {0.0, 1.0, 0, 20, {}}, 1, 0);
  REQUIRE(full.finish[0] == rollout::Finish::kLength);
  const auto& ids = full.response_ids[0];
  const std::string stop = f.tok->decode(ids).substr(6, 2);
  // Where a stop string ends a response whose minimum is `min`: the first length n >= min at which the bytes of
  // token n complete a match (vLLM: stop strings are checked once the output has min_tokens tokens); {n, true}, or
  // {20, false} when none does.
  auto expected_end = [&](int64_t min) -> std::pair<int64_t, bool> {
    std::string text;
    for (size_t n = 1; n <= ids.size(); ++n) {
      const size_t before = text.size();
      text = f.tok->decode(std::vector<int64_t>(ids.begin(), ids.begin() + n));
      const size_t at = text.rfind(stop);
      if (static_cast<int64_t>(n) >= min && at != std::string::npos && at + stop.size() > before)
        return {static_cast<int64_t>(n), true};
    }
    return {static_cast<int64_t>(ids.size()), false};
  };
  const int64_t first = expected_end(0).first;
  REQUIRE(expected_end(0).second);
  REQUIRE(expected_end(first + 1).first > first);  // so the case min = first + 1 shows an early match ignored
  for (int64_t min : {int64_t{0}, first, first + 1, int64_t{20}}) {
    INFO("min_new_tokens " << min << "; without it the stop string ends the row at " << first << " tokens");
    rollout::SamplingParams sp{0.0, 1.0, 0, 20, {stop}};
    sp.min_new_tokens = min;
    auto b = f.run(tiny, sp, 1, 0);
    const auto [want, stopped] = expected_end(min);
    CHECK(b.response_lengths[0] == want);
    CHECK(b.finish[0] == (stopped ? rollout::Finish::kStop : rollout::Finish::kLength));
    CHECK(std::vector<int64_t>(ids.begin(), ids.begin() + want) == b.response_ids[0]);
  }
}

TEST_CASE("eval sampling takes eval.min_new_tokens, else rollout.min_new_tokens", "[eval][min_new_tokens]") {
  auto c = config::load_text("rollout:\n  min_new_tokens: 5\n", "run.yaml", {});
  CHECK(eval::eval_sampling(c).min_new_tokens == 5);
  c = config::load_text("rollout:\n  min_new_tokens: 5\neval:\n  min_new_tokens: 0\n", "run.yaml", {});
  CHECK(eval::eval_sampling(c).min_new_tokens == 0);
  CHECK(config::load_text("", "run.yaml", {}).eval.min_new_tokens == -1);
}
