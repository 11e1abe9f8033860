// What users of the other GSPO trainers reach for, end to end on tiny models: dynamic sampling, the soft overlong
// penalty, reward scaling, the entropy mask, bf16 sampling with its mismatch measured and corrected; and the group
// merge dynamic sampling builds its batch with.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>

#include "gspo/cli/train_job.h"
#include "gspo/config/load.h"
#include "gspo/rollout/batch_merge.h"
#include "helpers.h"

using namespace gspo;
using test::fresh_dir;
using test::read_metrics;

namespace {

// Rewards 1 for a leading 0-4: about half the samples, so some groups have a signal and some do not.
config::Config cfg(const std::string& out, std::vector<std::string> sets = {}) {
  sets.insert(sets.begin(), {"model.path=" + test::model_path("tiny_prior.pt"), "train.output_dir=" + out});
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 8, group_size: 4, max_new_tokens: 3}
reward: {kind: regex, regex: "^[0-4]"}
algorithm: {num_minibatches: 2, loss: gspo}
optimizer: {lr: 3.0e-3, warmup_steps: 1}
train: {max_steps: 2}
checkpoint: {every: 0}
logging: {progress: false}
)", "test.yaml", sets);
}

std::vector<nlohmann::json> run(const std::string& name, const std::vector<std::string>& sets) {
  const auto dir = fresh_dir(name);
  cli::TrainJob(cfg(dir, sets), "").run();
  return read_metrics(dir);
}

rollout::RolloutBatch toy_batch(int64_t P, int64_t R, int64_t first_token) {
  rollout::RolloutBatch b;
  b.prompt_len = P;
  b.group_size = 2;
  b.input_ids = torch::arange(first_token, first_token + 4 * (P + R), torch::kLong).view({4, P + R});
  b.attention_mask = torch::ones({4, P + R}, torch::kLong);
  b.response_mask = torch::ones({4, R});
  b.loss_mask = torch::ones({4, R});
  b.behaviour_logprobs = -torch::ones({4, R});
  for (int64_t r = 0; r < 4; ++r) {
    b.response_lengths.push_back(R);
    b.finish.push_back(rollout::Finish::kLength);
    b.response_ids.push_back({});
    b.response_text.push_back("row" + std::to_string(first_token + r));
  }
  return b;
}

}  // namespace

TEST_CASE("merging groups of batches keeps the layout: prompts right-aligned, responses from column P", "[rollout]") {
  auto a = toy_batch(2, 1, 0), b = toy_batch(3, 2, 100);
  auto m = rollout::merge_groups({&a, &b}, {{1, 1}, {0, 0}}, -5);
  REQUIRE(m.prompt_len == 3);
  REQUIRE(m.input_ids.sizes() == torch::IntArrayRef({4, 5}));
  // b's group 1 (rows 2, 3) first, unchanged: it has the widest prompt and response.
  CHECK(torch::equal(m.input_ids.narrow(0, 0, 2), b.input_ids.narrow(0, 2, 2)));
  // a's row 0: one pad column before its 2 prompt tokens, its response token at column 3, one pad after.
  CHECK(m.input_ids[2].equal(torch::tensor({-5, 0, 1, 2, -5}, torch::kLong)));
  CHECK(m.attention_mask[2].equal(torch::tensor({0, 1, 1, 1, 0}, torch::kLong)));
  CHECK(m.response_mask[2].equal(torch::tensor({1.0f, 0.0f})));
  CHECK(m.response_text[2] == "row0");
  CHECK(m.num_rows() == 4);
}

TEST_CASE("dynamic sampling: extra rounds until the batch's groups carry a signal, counted", "[train][dapo]") {
  const auto plain = run("dapo_plain", {});
  const auto dyn = run("dapo_dynamic", {"rollout.dynamic_sampling=true", "rollout.dynamic_max_rounds=4"});
  REQUIRE(plain.size() == 2);
  REQUIRE(dyn.size() == 2);
  REQUIRE(plain[0]["zero_variance_frac"].get<double>() > 0);  // the task leaves groups without a signal
  CHECK_FALSE(plain[0].contains("dynamic_rounds"));
  for (const auto& m : dyn) {
    const int64_t rounds = m["dynamic_rounds"];
    CHECK(rounds <= 4);
    CHECK(m["dynamic_prompts"].get<int64_t>() == 8 * (1 + rounds));
    // Either every kept group has a signal, or the rounds ran out.
    CHECK((m["zero_variance_frac"].get<double>() == 0.0 || rounds == 4));
  }
  CHECK(dyn[0]["dynamic_rounds"].get<int64_t>() >= 1);
  CHECK(dyn[0]["zero_variance_frac"].get<double>() < plain[0]["zero_variance_frac"].get<double>());
}

TEST_CASE("soft overlong penalty: linear in the buffer, added to the reward", "[train][dapo]") {
  const auto plain = run("overlong_plain", {"train.max_steps=1"});
  const auto pen = run("overlong_on", {"train.max_steps=1", "reward.overlong_buffer=2", "reward.overlong_penalty=0.5"});
  // Same seed, same samples: only the rewards differ, by the penalty.
  CHECK(pen[0]["response_len_mean"] == plain[0]["response_len_mean"]);
  const double p = pen[0]["overlong_penalty_mean"];
  CHECK(p < 0);
  CHECK(p >= -0.5);
  CHECK(pen[0]["reward_mean"].get<double>() == Approx(plain[0]["reward_mean"].get<double>() + p).margin(1e-12));
  // Lengths 1..3 with max_new_tokens 3 and a buffer of 2: length 2 costs 0.25, length 3 costs 0.5.
  CHECK(pen[0]["overlong_penalized_frac"].get<double>() > 0);
}

TEST_CASE("scale_rewards batch and none, component_norm before_sum, the entropy mask: runs that learn", "[train][dapo]") {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"algorithm.scale_rewards=batch"},
           {"algorithm.scale_rewards=none"},
           {"reward.components=[\"regex:1\", \"leading_integer:0.5\"]", "algorithm.component_norm=before_sum"},
           {"algorithm.top_entropy_quantile=0.25"}}) {
    INFO(sets.front());
    const auto ms = run("dapo_variant", sets);
    REQUIRE(ms.size() == 2);
    for (const auto& m : ms) CHECK(std::isfinite(m["loss"].get<double>()));
    CHECK(ms[1]["grad_norm"].get<double>() > 0);
  }
  const auto masked = run("entropy_mask", {"algorithm.top_entropy_quantile=0.25"});
  const double kept = masked[0]["policy_token_frac"];
  CHECK(kept >= 0.25);  // ties at the threshold are kept
  CHECK(kept < 0.6);
}

TEST_CASE("bf16 sampling of a float32 policy: the mismatch is measured, tis and mis correct it", "[train][dapo]") {
  const auto same = run("mismatch_same", {"train.max_steps=1"});
  REQUIRE(same[0].contains("mismatch_logprob_diff_max"));  // measured by default
  CHECK(same[0]["mismatch_logprob_diff_max"].get<double>() < 1e-3);  // float32 KV-cache decode vs full forward
  CHECK(same[0]["is_weight_mean"].get<double>() == Approx(1.0).margin(1e-4));

  const auto bf16 = run("mismatch_bf16", {"train.max_steps=1", "rollout.dtype=bfloat16"});
  const double diff = bf16[0]["mismatch_logprob_diff_max"];
  CHECK(diff > 1e-4);  // bf16 weights against float32: a real mismatch
  CHECK(std::isfinite(diff));

  const auto tis = run("mismatch_tis", {"rollout.dtype=bfloat16", "algorithm.is_correction=tis", "algorithm.is_cap=1.001"});
  CHECK(tis[0]["is_truncated_frac"].get<double>() > 0);
  CHECK(std::isfinite(tis[1]["loss"].get<double>()));
  const auto mis = run("mismatch_mis", {"rollout.dtype=bfloat16", "algorithm.is_correction=mis", "algorithm.is_cap=1.001",
                                        "algorithm.is_floor=0.999"});
  CHECK(mis[0]["is_rejected_frac"].get<double>() > 0);
  CHECK(mis[0]["policy_token_frac"].get<double>() < 1.0);
  CHECK(mis[0]["policy_token_frac"].get<double>() == Approx(1.0 - mis[0]["is_rejected_frac"].get<double>()).margin(1e-9));
}

// The update's device reads per micro-batch (train_host_reads, the CPU-measurable proxy of a GPU's host round trips):
// one copy for the loss value, its statistics and the entropy sum; the per-layer pass's shapes (its width and token
// count) come from the host, where the micro-batch was sliced. It took 7 before these were folded (the row check,
// the statistics, loss.item(), the entropy sum, a boolean index), then 3.
TEST_CASE("an update micro-batch reads the device once, 3 times with the entropy mask", "[train][dapo]") {
  for (const auto& [sets, want] : {std::pair<std::vector<std::string>, double>{{}, 1.0},
                                   {{"algorithm.top_entropy_quantile=0.5"}, 3.0}}) {
    const auto metrics = run("host_reads", sets);
    REQUIRE(metrics.size() == 2);
    for (const auto& m : metrics) {
      if (m["update_sequences"].get<int64_t>() == 0) continue;  // nothing to update: no micro-batch read anything
      CHECK(m["train_host_reads"].get<double>() == want);
    }
  }
}
