// Sampling: greedy vs an uncached argmax loop, seeds, top-k/top-p support and frequencies, behaviour log-probs
// vs a full forward of the finished batch, stop strings and prompt errors.
//
// Exactness: two samplings of the same rows with different batch shapes (compaction cadence, other rows in the
// batch, cached vs uncached forward) compute logits that differ by float rounding, so their log-probs are compared
// with a tolerance, and a token may differ where its draw lies within that rounding of a CDF bucket edge (or, for
// argmax, of a tie). Such comparisons measure each token's margin on a full forward and accept a disagreement only
// at a near-edge token (sample_compare.h). Bitwise comparisons remain where shapes and code paths are identical.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "gspo/core/error.h"
#include "gspo/rollout/sampler.h"
#include "helpers.h"
#include "sample_compare.h"

using namespace gspo;

namespace {
at::Tensor uniforms(int64_t n, uint64_t seed) {
  std::vector<int64_t> rows(n);
  std::iota(rows.begin(), rows.end(), 0);
  return rollout::row_uniforms({seed, 0}, rows, 0);
}

struct Fixture {
  model::Policy policy = test::load_tiny();
  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::from_spec(policy.tokenizer_json(), "tiny.pt");
  std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("12+7="), tok->encode_prompt("Hello, w"),
                                            tok->encode_prompt("a")};
  rollout::RolloutBatch run(rollout::SamplingParams p, int64_t G, uint64_t seed) {
    rollout::Sampler s(policy, *tok, p);
    return s.generate(prompts, G, {seed, 0});
  }
};

// RolloutBatch::response_text is what the callers used to decode themselves: the response ids without a final EOS.
void check_response_text(const rollout::RolloutBatch& b, const tokenizer::Tokenizer& tok) {
  REQUIRE(b.response_text.size() == b.response_ids.size());
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    auto ids = b.response_ids[r];
    if (!ids.empty() && ids.back() == tok.eos_id()) ids.pop_back();
    CHECK(b.response_text[r] == tok.decode(ids));
  }
}
}  // namespace

TEST_CASE("temperature 0 equals greedy argmax of the uncached forward", "[rollout]") {
  Fixture f;
  auto b = f.run({0.0, 1.0, 0, 12, {}}, 1, 0);
  // A tiny positive temperature gives the same tokens as greedy wherever the top logit gap dominates.
  auto cold = f.run({1e-4, 1.0, 0, 12, {}}, 1, 5);
  // Greedy (cached decode, 3 rows) vs this uncached forward (1 row): logits differ by rounding, < 1e-4 (the
  // KV-cache test's bound), so the argmax can differ only where the top two logits are within 2e-4 (1e-3: 5x).
  constexpr double kTieGap = 1e-3;
  // T = 1e-4 vs greedy: logits equal up to rounding while the tokens agree, so the cold draw leaves the argmax with
  // probability <= (V - 1) exp(-(gap - 2e-4) / 1e-4) = 258 exp(-48) ~ 4e-19 at gap 5e-3: below the noise's
  // resolution 2^-53, i.e. never. Below that gap a different token is a legitimate draw.
  constexpr double kColdGap = 5e-3;
  torch::NoGradGuard g;
  for (size_t i = 0; i < f.prompts.size(); ++i) {
    INFO("prompt " << i);
    REQUIRE(b.response_ids[i].size() == 12u);
    std::vector<int64_t> seq = f.prompts[i];
    bool cold_agrees = true;
    for (size_t step = 0; step < 12; ++step) {
      INFO("step " << step);
      // The uncached forward follows the greedy run's own tokens, so every step is checked, not just a prefix.
      auto ids = torch::tensor(seq).view({1, -1});
      auto top = f.policy.logits(ids, torch::ones_like(ids))[0][-1].topk(2);
      const auto& values = std::get<0>(top);
      const double gap = values[0].item<double>() - values[1].item<double>();
      const int64_t next = std::get<1>(top)[0].item<int64_t>();
      INFO("greedy " << b.response_ids[i][step] << ", uncached argmax " << next << ", top-2 gap " << gap);
      if (b.response_ids[i][step] != next) CHECK(gap < kTieGap);
      if (cold_agrees && step < cold.response_ids[i].size() && cold.response_ids[i][step] != b.response_ids[i][step]) {
        INFO("cold draw " << cold.response_ids[i][step]);
        CHECK(gap < kColdGap);
        cold_agrees = false;  // the contexts differ from here on
      }
      seq.push_back(b.response_ids[i][step]);
    }
    if (cold_agrees) CHECK(cold.response_ids[i] == b.response_ids[i]);
  }
}

TEST_CASE("same seed gives the same samples, a different seed different ones", "[rollout]") {
  Fixture f;
  rollout::SamplingParams p{1.0, 1.0, 0, 16, {}};
  auto a = f.run(p, 4, 11);
  auto b = f.run(p, 4, 11);
  auto c = f.run(p, 4, 12);
  // Same prompts, shapes, thread settings and code path on one machine: bitwise equal is the contract here.
  CHECK(a.response_ids == b.response_ids);
  CHECK(torch::equal(a.behaviour_logprobs, b.behaviour_logprobs));
  CHECK(a.response_ids != c.response_ids);
  // Samples of one prompt differ from each other (the G copies do not share a random stream).
  CHECK(a.response_ids[0] != a.response_ids[1]);
}

TEST_CASE("behaviour log-probs equal log-softmax of a full forward over the sampled batch (tol 1e-4)", "[rollout]") {
  Fixture f;
  // Many single-byte stop strings make rows finish at different steps, exercising cache compaction.
  std::vector<std::string> stops;
  for (char c = 'a'; c <= 'z'; ++c) stops.emplace_back(1, c);
  for (double temp : {1.0, 0.7}) {
    INFO("temperature " << temp);
    auto b = f.run({temp, 0.95, 40, 24, stops}, 5, 3);
    auto lp = test::response_logprobs(f.policy, b.input_ids, b.attention_mask, b.prompt_len, temp);
    auto diff = ((lp - b.behaviour_logprobs) * b.response_mask).abs().max().item<double>();
    CHECK(diff < 1e-4);
    // Mask and lengths agree (a float32 sum of a few hundred ones is exact); padding carries zero log-prob.
    CHECK(b.response_mask.sum().item<double>() == static_cast<double>(b.generated_tokens()));
    CHECK((b.behaviour_logprobs * (1 - b.response_mask)).abs().sum().item<double>() == 0.0);
    std::set<int64_t> lengths(b.response_lengths.begin(), b.response_lengths.end());
    CHECK(lengths.size() > 2);  // rows really did finish at different times
  }
}

TEST_CASE("stop strings end a response right after the token that completes them", "[rollout][stop]") {
  Fixture f;
  auto greedy = f.run({0.0, 1.0, 0, 20, {}}, 1, 0);
  const std::string full = f.tok->decode(greedy.response_ids[0]);
  const std::string stop = full.substr(6, 2);
  auto stopped = f.run({0.0, 1.0, 0, 20, {stop}}, 1, 0);
  const std::string text = f.tok->decode(stopped.response_ids[0]);
  CHECK(stopped.finish[0] == rollout::Finish::kStop);
  REQUIRE(text.size() >= stop.size());
  CHECK(text.compare(text.size() - stop.size(), stop.size(), stop) == 0);
  CHECK(text.find(stop) == text.size() - stop.size());
  check_response_text(stopped, *f.tok);
  CHECK(full.compare(0, text.size(), text) == 0);
  CHECK(greedy.finish[0] == rollout::Finish::kLength);
}

namespace {
// Independent reference: the allowed set and renormalised probabilities, computed with plain vectors.
std::vector<double> reference_probs(const std::vector<double>& logits, int64_t top_k, double top_p) {
  const size_t V = logits.size();
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  double mx = logits[order[0]], z = 0;
  std::vector<double> p(V);
  for (size_t i = 0; i < V; ++i) z += std::exp(logits[i] - mx);
  for (size_t i = 0; i < V; ++i) p[i] = std::exp(logits[i] - mx) / z;
  std::vector<char> keep(V, 0);
  size_t k = top_k > 0 ? std::min<size_t>(top_k, V) : V;
  for (size_t i = 0; i < k; ++i) keep[order[i]] = 1;
  // top-p over the top-k renormalised distribution
  double zk = 0;
  for (size_t i = 0; i < k; ++i) zk += p[order[i]];
  double mass = 0;
  for (size_t i = 0; i < k; ++i) {
    if (mass >= top_p) keep[order[i]] = 0;
    mass += p[order[i]] / zk;
  }
  double zz = 0;
  for (size_t i = 0; i < V; ++i) zz += keep[i] ? p[i] : 0;
  for (size_t i = 0; i < V; ++i) p[i] = keep[i] ? p[i] / zz : 0;
  return p;
}
}  // namespace

TEST_CASE("top-k and top-p never emit excluded tokens and match the renormalised frequencies", "[rollout][stats]") {
  const std::vector<double> logits_v = {2.0, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -3.0};
  auto logits = torch::tensor(logits_v, torch::kFloat).view({1, -1});
  struct Case { int64_t k; double p; };
  for (auto c : {Case{3, 1.0}, Case{0, 0.8}, Case{5, 0.7}, Case{1, 1.0}, Case{0, 1.0}}) {
    INFO("top_k " << c.k << " top_p " << c.p);
    auto ref = reference_probs(logits_v, c.k, c.p);
    rollout::SamplingParams sp{1.0, c.p, c.k, 1, {}};
    const int draws = 20000;
    auto many = logits.expand({draws, 8}).contiguous();
    auto d = rollout::sample_next(many, sp, uniforms(draws, 99));
    auto counts = torch::bincount(d.tokens, {}, 8);
    for (int v = 0; v < 8; ++v) {
      double freq = counts[v].item<double>() / draws;
      if (ref[v] == 0) {
        CHECK(freq == 0.0);
      } else {
        // 5 binomial standard deviations
        double sd = std::sqrt(ref[v] * (1 - ref[v]) / draws);
        CHECK(std::abs(freq - ref[v]) < 5 * sd + 1e-9);
      }
    }
    // Recorded log-prob is the unfiltered log-softmax at the sampling temperature.
    auto expect = logits.log_softmax(-1)[0].index_select(0, d.tokens);
    CHECK((expect - d.logprobs).abs().max().item<double>() < 1e-6);
  }
}

TEST_CASE("bad prompts are data errors naming the prompt", "[rollout]") {
  Fixture f;
  rollout::Sampler s(f.policy, *f.tok, {1.0, 1.0, 0, 8, {}});
  const rollout::NoiseKey gen{0, 0};
  CHECK_THROWS_WITH(s.generate({{}}, 2, gen), Catch::Contains("prompt 0 is empty"));
  std::vector<int64_t> longp(f.policy.manifest().max_seq_len, 65);
  CHECK_THROWS_WITH(s.generate({{65}, longp}, 2, gen), Catch::Contains("prompt 1 has 256 tokens; with max_new_tokens 8 "
                                                                       "that exceeds the model's max_seq_len 256"));
  CHECK_THROWS_WITH(s.generate({{65, 999}}, 2, gen), Catch::Contains("outside the model's vocabulary"));
}

TEST_CASE("finished rows stop costing compute", "[rollout]") {
  Fixture f;
  std::vector<std::string> stops;
  for (char c = 'a'; c <= 'z'; ++c) stops.emplace_back(1, c);
  rollout::Sampler s(f.policy, *f.tok, {1.0, 1.0, 0, 40, stops});
  auto b = s.generate(f.prompts, 8, {1, 0});
  const auto& st = s.last_stats();
  const int64_t naive = st.decode_steps * b.num_rows();
  INFO("row-steps " << st.row_steps << " vs no compaction " << naive);
  CHECK(st.row_steps < naive);
}

TEST_CASE("ids past the tokenizer's vocabulary are never sampled", "[rollout]") {
  auto logits = torch::zeros({4000, 10});
  logits.narrow(1, 8, 2).fill_(5.0);  // the two padded ids are by far the most likely
  rollout::SamplingParams p{1.0, 1.0, 0, 1, {}};
  p.vocab_limit = 8;
  auto gen = uniforms(4000, 1);
  auto d = rollout::sample_next(logits, p, gen);
  CHECK(d.tokens.max().item<int64_t>() < 8);
  p.temperature = 0;
  CHECK(rollout::sample_next(logits, p, gen).tokens.max().item<int64_t>() < 8);
  p.temperature = 1;
  p.top_k = 3;
  CHECK(rollout::sample_next(logits, p, gen).tokens.max().item<int64_t>() < 8);
}

TEST_CASE("a row's samples do not depend on the other rows of its batch", "[rollout]") {
  // What data-parallel ranks rely on: prompt 0 sampled alone with noise rows 0..G-1 and prompts 1..2 with rows
  // G..3G-1 give the responses of one batch of all three prompts. The batches differ in rows and prompt padding,
  // so logits differ by rounding: log-probs within kLogprobTol, tokens equal except at a near-edge draw.
  Fixture f;
  const int64_t G = 4;
  rollout::Sampler s(f.policy, *f.tok, {1.0, 1.0, 0, 12, {}});
  auto whole = s.generate(f.prompts, G, {7, 0});
  auto first = s.generate({f.prompts[0]}, G, {7, 0});
  auto rest = s.generate({f.prompts[1], f.prompts[2]}, G, {7, G});
  auto margin = test::cdf_margins(f.policy, whole, {7, 0}, 1.0, s.params().vocab_limit);
  int64_t agreed = 0;
  for (int64_t r = 0; r < G; ++r) agreed += test::same_row(whole, r, first, r, margin);
  for (int64_t r = 0; r < 2 * G; ++r) agreed += test::same_row(whole, G + r, rest, r, margin);
  CHECK(agreed * 2 > 3 * G);  // a near-edge flip is rare: most rows are compared in full
  auto other = s.generate(f.prompts, G, {8, 0});
  bool differs = false;
  for (int64_t r = 0; r < 3 * G; ++r) differs |= other.response_ids[r] != whole.response_ids[r];
  CHECK(differs);
}

TEST_CASE("counter-based uniforms are uniform and keyed by row, not batch position", "[rollout][stats]") {
  std::vector<int64_t> rows(100000);
  std::iota(rows.begin(), rows.end(), 0);
  auto u = rollout::row_uniforms({3, 0}, rows, 5);
  CHECK(u.min().item<double>() >= 0.0);
  CHECK(u.max().item<double>() < 1.0);
  // Mean and variance of U[0,1) within 5 standard errors; decile counts within 5 sd of 10000.
  CHECK(std::abs(u.mean().item<double>() - 0.5) < 5 * std::sqrt(1.0 / 12 / 1e5));
  auto counts = torch::histc(u, 10, 0, 1);
  for (int i = 0; i < 10; ++i) CHECK(std::abs(counts[i].item<double>() - 1e4) < 5 * std::sqrt(1e5 * 0.1 * 0.9));
  // Row 70000 of a batch starting at row 0 is row 0 of a batch starting at row 70000 (integer hashing, then an exact
  // int-to-double scaling: bitwise).
  CHECK(rollout::row_uniforms({3, 70000}, std::vector<int64_t>{0}, 5).item<double>() == u[70000].item<double>());
  CHECK(rollout::uniform01(3, 1, 5) != rollout::uniform01(3, 1, 6));
}

TEST_CASE("checking for finished rows every 8 steps (the GPU cadence) changes no sample", "[rollout]") {
  Fixture f;
  auto prior = test::load_tiny("tiny_prior.pt");  // emits EOS often, so rows finish at different steps
  rollout::SamplingParams every1{1.0, 1.0, 0, 24, {}}, every8 = every1;
  every1.host_sync_every = 1;
  every8.host_sync_every = 8;
  rollout::Sampler s1(prior, *f.tok, every1), s8(prior, *f.tok, every8);
  auto a = s1.generate(f.prompts, 8, {4, 0});
  auto b = s8.generate(f.prompts, 8, {4, 0});
  // The cadence changes when finished rows are compacted away, hence the decode batch sizes and the rounding of
  // the logits (log-probs differ in the 7th digit on AMD EPYC): log-probs within kLogprobTol, and the tokens equal
  // except at a draw within kFlipMargin of a CDF edge (sample_compare.h).
  auto margin = test::cdf_margins(prior, a, {4, 0}, 1.0, s1.params().vocab_limit);
  int64_t eos = 0, agreed = 0;
  for (int64_t r = 0; r < a.num_rows(); ++r) {
    agreed += test::same_row(a, r, b, r, margin);
    eos += a.finish[r] == rollout::Finish::kEos;
  }
  CHECK(agreed * 2 > a.num_rows());  // a near-edge flip is rare: most rows are compared in full
  CHECK(eos > 0);
  check_response_text(a, *f.tok);  // rows ending in EOS and rows cut at the length limit
  check_response_text(b, *f.tok);
  CHECK(s8.last_stats().host_syncs * 4 <= s1.last_stats().host_syncs + 4);
}

// Bitwise across code paths is legitimate here: both compute the same uint64 hash (integer arithmetic is exact) and
// scale its top 53 bits by 2^-53, exactly representable in float64.
TEST_CASE("device-side sampling noise is bit-identical to the host's", "[rollout]") {
  std::vector<int64_t> rows(5000);
  std::iota(rows.begin(), rows.end(), 0);
  for (uint64_t seed : {0ULL, 7ULL, 0xFFFFFFFFFFFFFFFFULL})
    for (int64_t pos : {0, 1, 513}) {
      const rollout::NoiseKey key{seed, 123456789};
      CHECK(rollout::row_uniforms(key, rows, pos).equal(rollout::row_uniforms(key, torch::tensor(rows), pos)));
      // A row's hash (what partial rollouts carry between calls) gives the same uniforms, host and tensor forms.
      std::vector<uint64_t> hashes;
      for (auto r : rows) hashes.push_back(rollout::row_hash(key, r));
      const std::vector<int64_t> at(rows.size(), pos);
      auto h = torch::from_blob(hashes.data(), {static_cast<int64_t>(hashes.size())}, torch::kLong).clone();
      CHECK(rollout::hash_uniforms(hashes, at).equal(rollout::row_uniforms(key, rows, pos)));
      CHECK(rollout::hash_uniforms(h, torch::full({h.size(0)}, pos, torch::kLong)).equal(rollout::row_uniforms(key, rows, pos)));
    }
}
