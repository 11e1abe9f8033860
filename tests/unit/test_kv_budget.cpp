// The sampler under a KV-cache budget (rollout.kv_cache_mb): a fixed pool of cache rows, continuous batching through
// the model's slot methods, static batches without them, the prompt prefilled once per group, and the same samples
// as without a budget. Budgeted and unbudgeted runs differ in batch shapes and cache layout, so they are compared
// with sample_compare.h's rule (log-probs within kLogprobTol, a token flip only at a near-edge draw), never bitwise.
#include <catch2/catch.hpp>

#include <numeric>

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
  const int64_t G = 8;
  const rollout::NoiseKey key{11, 0};

  int64_t columns() const {
    int64_t P = 0;
    for (const auto& p : prompts) P = std::max<int64_t>(P, p.size());
    return P + params.max_new_tokens;
  }
  int64_t row_bytes() { return policy.init_cache(1, columns()).nbytes(); }
  rollout::RolloutBatch run(const rollout::SamplingParams& p, rollout::SamplerStats* stats = nullptr) {
    rollout::Sampler s(policy, *tok, p);
    auto b = s.generate(prompts, G, key);
    if (stats) *stats = s.last_stats();
    return b;
  }
};

// Every row of `b` against the same row of `base`; most rows must agree in full (a near-edge flip is rare).
void same_samples(model::Policy& policy, const rollout::RolloutBatch& base, const rollout::RolloutBatch& b,
                  const rollout::NoiseKey& key, int64_t vocab_limit) {
  REQUIRE(b.num_rows() == base.num_rows());
  auto margin = test::cdf_margins(policy, base, key, 1.0, vocab_limit);
  int64_t agreed = 0;
  for (int64_t r = 0; r < base.num_rows(); ++r) agreed += test::same_row(base, r, b, r, margin);
  CHECK(agreed * 4 > base.num_rows() * 3);
}

}  // namespace

TEST_CASE("under a KV budget, continuous batching samples what the unbudgeted sampler samples", "[rollout][kv]") {
  Fixture f;
  rollout::SamplerStats base_stats, st;
  auto base = f.run(f.params, &base_stats);
  CHECK(base_stats.slots == f.G * 4);
  CHECK(base_stats.kv_bytes == f.G * 4 * f.row_bytes());
  for (int64_t slots : {1, 3, 8, 20}) {
    INFO("slots " << slots);
    auto p = f.params;
    p.kv_cache_bytes = slots * f.row_bytes() + f.row_bytes() / 2;  // a budget between two row counts rounds down
    auto b = f.run(p, &st);
    CHECK(st.slots == slots);
    CHECK(st.kv_bytes == slots * f.row_bytes());  // the pool and nothing more
    CHECK(st.kv_bytes <= p.kv_cache_bytes);
    same_samples(f.policy, base, b, f.key, 0);
    // Every prompt prefilled once per call, never once per sample: at most one padded prompt row per prompt.
    int64_t real = 0;
    for (const auto& q : f.prompts) real += static_cast<int64_t>(q.size());
    CHECK(st.prefill_tokens >= real);
    CHECK(st.prefill_tokens <= static_cast<int64_t>(f.prompts.size()) * (f.columns() - f.params.max_new_tokens));
    CHECK(st.busy_slot_steps == b.generated_tokens());
    CHECK(st.slot_util() > 0);
    CHECK(st.slot_util() <= 1);
  }
}

TEST_CASE("under a KV budget, static batches sample the same rows, and keep fewer slots busy than continuous batching",
          "[rollout][kv]") {
  Fixture f;
  auto base = f.run(f.params);
  auto p = f.params;
  p.kv_cache_bytes = 8 * f.row_bytes();
  rollout::SamplerStats cont, stat;
  auto a = f.run(p, &cont);
  p.continuous = false;
  auto b = f.run(p, &stat);
  same_samples(f.policy, base, b, f.key, 0);
  CHECK(stat.slots == 8);
  CHECK(stat.kv_bytes <= p.kv_cache_bytes);
  // One static batch of 8 runs until its longest response ends; the continuous pool refills a slot as soon as its row
  // ends (tiny_prior's lengths are long-tailed, so the difference is large).
  INFO("slot utilisation: continuous " << cont.slot_util() << ", static " << stat.slot_util());
  CHECK(cont.slot_util() > stat.slot_util() + 0.1);
  CHECK(cont.decode_steps < stat.decode_steps);

  SECTION("fewer slots than a group: the group is split into batches of its samples") {
    p.kv_cache_bytes = 3 * f.row_bytes();
    same_samples(f.policy, base, f.run(p), f.key, 0);
  }
}

TEST_CASE("a model without slot methods honours the budget with static batches", "[rollout][kv]") {
  auto policy = test::load_tiny("tiny_without_layers.pt");
  REQUIRE_FALSE(policy.has_slots());
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), "tiny.pt");
  std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("12+7="), tok->encode_prompt("a")};
  rollout::SamplingParams p{1.0, 1.0, 0, 16, {}};
  rollout::Sampler whole(policy, *tok, p);
  auto base = whole.generate(prompts, 4, {5, 0});
  p.kv_cache_bytes = 3 * policy.init_cache(1, 6 + 16).nbytes();
  rollout::Sampler budgeted(policy, *tok, p);
  auto b = budgeted.generate(prompts, 4, {5, 0});
  CHECK(budgeted.last_stats().slots == 3);
  CHECK(budgeted.last_stats().kv_bytes <= p.kv_cache_bytes);
  same_samples(policy, base, b, {5, 0}, budgeted.params().vocab_limit);
}

TEST_CASE("min_new_tokens and stop strings hold per row under continuous batching", "[rollout][kv]") {
  Fixture f;
  f.params.min_new_tokens = 5;
  f.params.stop = {"1", "e"};
  auto base = f.run(f.params);
  auto p = f.params;
  p.kv_cache_bytes = 5 * f.row_bytes();
  auto b = f.run(p);
  same_samples(f.policy, base, b, f.key, 0);
  int64_t stopped = 0;
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    CHECK(b.response_lengths[r] >= 5);
    stopped += b.finish[r] == rollout::Finish::kStop;
  }
  CHECK(stopped > 0);
}

TEST_CASE("a KV budget below one row is a config error naming the key and the row size", "[rollout][kv]") {
  Fixture f;
  auto p = f.params;
  p.kv_cache_bytes = f.row_bytes() - 1;
  p.kv_budget_key = "eval.kv_cache_mb";
  rollout::Sampler s(f.policy, *f.tok, p);
  try {
    s.generate(f.prompts, f.G, f.key);
    FAIL("a budget below one row was accepted");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("eval.kv_cache_mb") && Catch::Contains("holds no row of KV cache") &&
                             Catch::Contains(std::to_string(f.row_bytes()) + " bytes") &&
                             Catch::Contains(std::to_string(f.columns()) + " columns"));
  }
  p.kv_cache_bytes = 0;
  p.kv_cache_fraction = 0.5;
  rollout::Sampler cpu(f.policy, *f.tok, p);
  CHECK_THROWS_WITH(cpu.generate(f.prompts, f.G, f.key), Catch::Contains("rollout.kv_cache_fraction: needs a CUDA"));
}

TEST_CASE("gspo inspect checks the slot methods against forward", "[rollout][kv][contract]") {
  const auto rejects = test::check_contract_rejects;
  rejects("broken_slot_api.pt", "slot_api() is 4, this gspo knows versions 1 to 3");
  rejects("broken_slots.pt", "the slot methods (prefill_slots, copy_slots, decode_slots) disagree with forward");
  // append_slots whose logits are right but whose cache writes are lost: the decode after it gives it away.
  rejects("broken_append.pt", "append_slots (then decode_slots) disagrees with forward");
  for (const char* name : {"tiny.pt", "tiny_qwen3.pt", "qwen3_moe_tiny.pt"}) {
    auto ok = test::load_tiny(name);
    CHECK(ok.has_slots());
    CHECK(ok.has_append());
    CHECK(model::check_contract(ok) < 1e-3);
  }
  auto one = test::load_tiny("slot_api1.pt");  // exported before append_slots: continuous batching still runs
  CHECK(one.has_slots());
  CHECK_FALSE(one.has_append());
  CHECK(model::check_contract(one) < 1e-3);
}

// #53: an export from before the sequence-major cache (slot_api 2, head-major [L, 2, S, Hkv, C, D], shipped in
// tests/data) still loads, passes inspect's check, and samples under a KV budget (the slot pool) what today's export
// of the same weights (slot_api 3) samples: the layout is the model's own business.
TEST_CASE("a slot_api 2 export (head-major cache) samples what its slot_api 3 re-export samples", "[rollout][kv][contract]") {
  auto old = model::Policy::load(std::string(GSPO_SOURCE_DIR) + "/tests/data/slot_api2_head_major.pt");
  auto now = test::load_tiny("slot_api3_same_weights.pt");
  CHECK(old.slot_api() == 2);
  CHECK(now.slot_api() == 3);
  CHECK(model::check_contract(old) < 1e-3);
  CHECK(model::check_contract(now) < 1e-3);
  CHECK(old.init_cache(3, 5).sizes().vec() != now.init_cache(3, 5).sizes().vec());  // the layouts do differ
  CHECK(old.init_cache(3, 5).numel() == now.init_cache(3, 5).numel());
  auto tok = tokenizer::from_spec(now.tokenizer_json(), "slot_api3_same_weights.pt");
  std::vector<std::vector<int64_t>> prompts{tok->encode_prompt("12+7="), tok->encode_prompt("abc"),
                                            tok->encode_prompt("3")};
  rollout::SamplingParams p{1.0, 1.0, 0, 24, {}};
  p.kv_cache_bytes = 5 * now.init_cache(1, 6 + 24).nbytes();
  rollout::Sampler a_s(old, *tok, p), b_s(now, *tok, p);
  auto a = a_s.generate(prompts, 4, {9, 0});
  auto b = b_s.generate(prompts, 4, {9, 0});
  CHECK(a_s.last_stats().slots == 5);
  CHECK(b_s.last_stats().slots == 5);
  // Same weights and kernels, other strides: logits equal within float rounding, so ids equal except at a draw within
  // kFlipMargin of a CDF bucket edge (sample_compare.h), log-probs within 1e-5.
  auto margin = test::cdf_margins(now, a, {9, 0}, 1.0, a_s.params().vocab_limit);
  int64_t same = 0;
  for (int64_t r = 0; r < a.num_rows(); ++r) same += test::same_row(a, r, b, r, margin, 1e-5);
  CHECK(same >= a.num_rows() - 1);
}

// Bitwise is legitimate: integer hashing, then an exact scaling (as the fixed-position form's test).
TEST_CASE("per-row noise positions give the fixed-position values, on the host and as tensors", "[rollout][kv]") {
  std::vector<int64_t> rows{0, 5, 9, 70000}, positions{3, 0, 17, 5};
  const rollout::NoiseKey key{7, 100};
  auto host = rollout::row_uniforms(key, rows, positions);
  auto dev = rollout::row_uniforms(key, torch::tensor(rows), torch::tensor(positions));
  for (size_t i = 0; i < rows.size(); ++i) {
    const double one = rollout::row_uniforms(key, std::vector<int64_t>{rows[i]}, positions[i]).item<double>();
    CHECK(host[i].item<double>() == one);
    CHECK(dev[i].item<double>() == one);
  }
}

// The slot state (rows, positions, columns) lives on the device and the steps advance it there: between refills a
// decode step costs at most the read of the finished flags at the sync interval (on a CPU, every step), nothing
// per token. The counts are the CPU's proxy for what a GPU would wait on (it used to upload 3 vectors every token).
TEST_CASE("continuous batching transfers only at the sync interval and at refills", "[rollout][kv]") {
  Fixture f;
  for (int64_t every : {1, 4}) {
    for (bool stops : {false, true}) {
      INFO("host_sync_every " << every << (stops ? ", with stop strings" : ""));
      auto p = f.params;
      p.kv_cache_bytes = 5 * f.row_bytes();
      p.host_sync_every = every;
      if (stops) p.stop = {"a"};
      rollout::SamplerStats st;
      f.run(p, &st);
      REQUIRE(st.slots == 5);
      REQUIRE(st.decode_steps > 20);
      CHECK(st.refill_transfers > 0);
      const int64_t loop = st.host_transfers - st.refill_transfers;
      if (!stops) {
        CHECK(loop == st.host_syncs);  // one read per sync: flags and the progress figure together
        CHECK(st.host_syncs <= st.decode_steps / every + 2);
      } else {
        CHECK(loop <= 3 * (st.decode_steps + 1));  // stop strings: the sampled tokens come to the host each step
      }
    }
  }
}
