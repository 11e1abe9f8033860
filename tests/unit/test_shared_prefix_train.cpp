// Shared prompts in the step (#71, train.shared_prefix and algorithm.minibatch_groups): which rows of a micro-batch
// pack (a group's prompt once), the prompt tokens each pass saves, mini-batches of whole groups, micro-batch budgets
// that count a shared prompt once, and a step with sharing on against the same step without it.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "gspo/cli/train_job.h"
#include "gspo/config/load.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/shared_prefix.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::vector<int64_t> iota_rows(int64_t n) {
  std::vector<int64_t> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

// A batch of 3 groups of 4 rows in the rollout layout: P = 6 prompt columns (group g's prompt has 6 - g real tokens,
// left-padded), R = 4 response columns; row r's response has 1 + (r % 4) tokens except where `lengths` says.
rollout::RolloutBatch grouped(std::vector<int64_t> lengths = {}) {
  const int64_t G = 4, groups = 3, P = 6, R = 4, n = G * groups;
  if (lengths.empty())
    for (int64_t r = 0; r < n; ++r) lengths.push_back(1 + r % 4);
  rollout::RolloutBatch b;
  b.prompt_len = P;
  b.group_size = G;
  b.input_ids = torch::zeros({n, P + R}, torch::kLong);
  b.attention_mask = torch::zeros({n, P + R}, torch::kLong);
  b.loss_mask = torch::zeros({n, R});
  for (int64_t r = 0; r < n; ++r) {
    const int64_t g = r / G, plen = P - g;
    for (int64_t c = P - plen; c < P; ++c) b.input_ids[r][c] = 10 + g * 7 + c, b.attention_mask[r][c] = 1;
    for (int64_t j = 0; j < lengths[static_cast<size_t>(r)]; ++j)
      b.input_ids[r][P + j] = 50 + r + j, b.attention_mask[r][P + j] = 1, b.loss_mask[r][j] = 1;
    b.response_lengths.push_back(lengths[static_cast<size_t>(r)]);
    b.finish.push_back(rollout::Finish::kEos);
  }
  b.response_mask = b.loss_mask.clone();
  b.behaviour_logprobs = torch::zeros({n, R});
  return b;
}

config::Config run_cfg(const std::string& out, const std::string& model, std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"model.path=" + test::model_path(model), "train.output_dir=" + out});
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 4, group_size: 4, max_new_tokens: 6}
reward: {kind: regex, regex: "^[0-4]"}
algorithm: {num_minibatches: 2, loss: gspo, minibatch_groups: true}
optimizer: {lr: 3.0e-3}
train: {max_steps: 2}
checkpoint: {every: 0}
logging: {progress: false}
)", "test.yaml", sets);
}

std::vector<torch::Tensor> weights_of(const std::string& run) {
  return model::Policy::load(io::policy_file(run + "/checkpoints/step_00000002")).parameters();
}

}  // namespace

TEST_CASE("shared prompts: a group's rows pack while the packed row's attention is no larger than theirs",
          "[shared_prefix][minibatch]") {
  // Prompt 8, responses of 1: (8 + 4)^2 = 144 <= 4 x 9^2 = 324, the four pack.
  CHECK(train::share_groups({0, 0, 0, 0}, {8, 8, 8, 8}, {1, 1, 1, 1}) == std::vector<int64_t>{0, 0, 0, 0});
  // Prompt 2, responses of 6: two together would be (2 + 12)^2 = 196 > 2 x 8^2 = 128, so each runs alone.
  CHECK(train::share_groups({0, 0, 0}, {2, 2, 2}, {6, 6, 6}) == std::vector<int64_t>{0, 1, 2});
  // Prompt 4, responses 1, 1, 1, 8: the first three pack ((4 + 3)^2 = 49 <= 75), the long one starts a new pack.
  CHECK(train::share_groups({0, 0, 0, 0}, {4, 4, 4, 4}, {1, 1, 1, 8}) == std::vector<int64_t>{0, 0, 0, 1});
  // Groups interleaved in the micro-batch keep their own ids; numbering follows first appearance.
  CHECK(train::share_groups({5, 3, 5, 3}, {8, 7, 8, 7}, {1, 1, 1, 1}) == std::vector<int64_t>{0, 1, 0, 1});
  CHECK_THROWS_WITH(train::share_groups({0, 0}, {8}, {1, 1}), Catch::Contains("2 rows"));
}

TEST_CASE("shared prompts: slice_rows tags the rows that share and counts the prompt tokens each pass saves",
          "[shared_prefix][minibatch]") {
  const auto b = grouped();
  const auto adv = torch::zeros({b.num_rows()});
  // Rows of groups 0 (prompt 6), 1 (prompt 5) and one of group 2, in a shuffled order.
  const std::vector<int64_t> rows{5, 0, 2, 9, 1, 4, 3};
  const auto plain = train::slice_rows(b, rows, adv);
  CHECK(plain.shape.prompt_group.empty());
  CHECK(plain.prompt_tokens_saved == 0);
  const auto shared = train::slice_rows(b, rows, adv, train::SharePrompts::kPacked);
  // Group 0 holds rows 0, 2, 1, 3 (prompt 6, responses 1, 3, 2, 4: (6 + 10)^2 = 256 <= 49 + 81 + 64 + 100 = 294),
  // group 1 rows 5, 4 ((5 + 3)^2 = 64 <= 49 + 36); row 9 alone.
  CHECK(shared.shape.prompt_group == std::vector<int64_t>{0, 1, 1, 2, 1, 0, 1});
  CHECK(shared.prompt_tokens_saved == 3 * 6 + 1 * 5);
  // The same tensors either way: only the pass's layout differs.
  CHECK(torch::equal(shared.ids, plain.ids));
  CHECK(torch::equal(shared.mask, plain.mask));
  // Nothing to share (one row of each group): the micro-batch runs unshared, as without the option.
  const auto alone = train::slice_rows(b, {0, 4, 8}, adv, train::SharePrompts::kPacked);
  CHECK(alone.shape.prompt_group.empty());
  CHECK(alone.prompt_tokens_saved == 0);
  CHECK_FALSE(shared.shape.whole_groups);
  // Whole groups (Policy::shared_layer): the rows' groups, each prompt once whatever the responses, and the lengths.
  const auto whole = train::slice_rows(b, rows, adv, train::SharePrompts::kWhole);
  CHECK(whole.shape.prompt_group == std::vector<int64_t>{1, 0, 0, 2, 0, 1, 0});
  CHECK(whole.shape.whole_groups);
  CHECK(whole.shape.prompt_len == std::vector<int64_t>{5, 6, 6, 4, 6, 5, 6});
  CHECK(whole.shape.response_len == std::vector<int64_t>{2, 1, 3, 2, 2, 1, 4});
  CHECK(whole.prompt_tokens_saved == 3 * 6 + 1 * 5);
  CHECK(train::slice_rows(b, {0, 4, 8}, adv, train::SharePrompts::kWhole).shape.prompt_group.empty());
  // The split only from a width (train.shared_prefix_split_tokens): group 0 holds 6 + 1 + 3 + 2 + 4 = 16 tokens.
  CHECK(train::widest_group(whole.shape.prompt_group, whole.shape.prompt_len, whole.shape.response_len) == 16);
  CHECK(train::slice_rows(b, rows, adv, train::SharePrompts::kWhole, 16).shape.whole_groups);
  const auto narrow = train::slice_rows(b, rows, adv, train::SharePrompts::kWhole, 17);
  CHECK_FALSE(narrow.shape.whole_groups);
  CHECK(narrow.shape.prompt_group == shared.shape.prompt_group);
  CHECK(narrow.prompt_tokens_saved == shared.prompt_tokens_saved);
}

TEST_CASE("whole-group mini-batches: each group's rows in one mini-batch, groups shuffled, filtered rows left out",
          "[shared_prefix][minibatch]") {
  const int64_t G = 4;
  std::vector<int64_t> rows;  // 8 groups; rows 9, 10 and the whole of group 5 filtered out
  for (int64_t r = 0; r < 32; ++r)
    if (r != 9 && r != 10 && r / G != 5) rows.push_back(r);
  at::Generator gen = at::detail::createCPUGenerator(7);
  const auto plan = train::plan_group_minibatches(rows, G, 3, gen);
  REQUIRE(plan.size() == 3);
  std::vector<int64_t> seen;
  std::map<int64_t, size_t> minibatch_of;
  for (size_t k = 0; k < plan.size(); ++k)
    for (int64_t r : plan[k]) {
      seen.push_back(r);
      const auto [it, fresh] = minibatch_of.emplace(r / G, k);
      CHECK(it->second == k);  // every row of a group in the group's one mini-batch
    }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == rows);
  // 7 groups in 3 mini-batches: 3, 2, 2 groups (minibatch_sizes over groups).
  std::vector<size_t> groups_in(3, 0);
  for (const auto& [g, k] : minibatch_of) ++groups_in[k];
  CHECK(groups_in == std::vector<size_t>{3, 2, 2});
  // Shuffled by group: over seeds, group 0 is not always in the first mini-batch.
  std::set<size_t> where;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    at::Generator g = at::detail::createCPUGenerator(seed);
    const auto p = train::plan_group_minibatches(rows, G, 3, g);
    for (size_t k = 0; k < p.size(); ++k)
      if (std::find(p[k].begin(), p[k].end(), 0) != p[k].end()) where.insert(k);
  }
  CHECK(where.size() > 1);
}

TEST_CASE("shared prompts: a token budget counts each packed prompt once and keeps a group's rows together",
          "[shared_prefix][minibatch]") {
  // 4 groups of 4 rows, prompt 64 columns, responses of 8: unshared a row costs 72 slots, a whole packed group
  // 64 + 4 x 8 = 96. A budget of 200 holds two packed groups (2 x 96) but only two unshared rows.
  const int64_t G = 4, P = 64;
  const std::vector<int64_t> lengths(16, 8);
  std::vector<int64_t> rows{13, 2, 7, 0, 12, 5, 1, 3, 15, 6, 4, 14, 8, 9, 11, 10};  // a shuffled mini-batch
  const auto unshared = train::plan_micro(rows, lengths, P, 0, 200);
  CHECK(unshared.size() == 8);
  const auto shared = train::plan_micro(rows, lengths, P, 0, 200, G);
  REQUIRE(shared.size() == 2);
  for (const auto& part : shared) {
    CHECK(part.size() == 8);
    std::set<int64_t> groups;
    for (int64_t r : part) groups.insert(r / G);
    CHECK(groups.size() == 2);  // whole groups
    CHECK(train::shared_padded_tokens(part, lengths, P, G) <= 200);
  }
  CHECK(train::shared_padded_tokens({0, 1, 2, 3}, lengths, P, G) == 96);
  CHECK(train::shared_padded_tokens({0, 1, 4}, lengths, P, G) == 2 * (64 + 16));
  // A row-count limit holds too, and without a budget micro_batch_size cuts the rows in group order.
  for (const auto& part : train::plan_micro(rows, lengths, P, 3, 200, G)) CHECK(part.size() <= 3);
  const auto by_size = train::plan_micro(rows, lengths, P, 4, 0, G);
  REQUIRE(by_size.size() == 4);
  for (const auto& part : by_size) {
    std::set<int64_t> groups;
    for (int64_t r : part) groups.insert(r / G);
    CHECK(groups.size() == 1);
  }
}

// Both runs sample the same rows (the same weights and shapes before any update) and cut the same whole-group
// mini-batches; with sharing each micro-batch's group runs its prompt once in every pass (old log-probs, update
// forward and backward). Tolerances as test_train's micro-batch case: grad norm, ratios and entropy 1e-5 relative;
// the loss 1e-5 relative or 1e-7 absolute (a sum of +-advantage x ratio terms of order 1 that nearly cancel: 7e-4
// after a step here, where float32 rounding of its terms is 1e-8); weights within 2% of one AdamW step (Adam divides by sqrt(v), magnifying rounding where gradients are
// near zero). The old-log-prob pass and the first mini-batch's forward take the same packed path, so the first
// mini-batch's ratios stay exactly 1.
TEST_CASE("train.shared_prefix: the unshared run's update, dense and MoE, packed or split, checkpointed or not, budgets on",
          "[shared_prefix][train]") {
  struct Case {
    const char* model;
    std::vector<std::string> sets;
  };
  // Split: train.shared_prefix_split_tokens=0 (these rows are narrower than the default's 512), through the models'
  // shared_layer; else packed rows.
  const std::vector<Case> cases{
      {"tiny_prior.pt", {}},
      {"tiny_prior.pt", {"train.activation_checkpointing=false"}},
      {"tiny_prior.pt", {"algorithm.micro_batch_tokens=80"}},
      // (responses of 2: the MoE model's prompts are short, and rows pack only while that costs no attention)
      {"qwen3_moe_tiny.pt", {"algorithm.routing_replay=old", "rollout.max_new_tokens=2"}},
      {"tiny_prior.pt", {"train.shared_prefix_split_tokens=0"}},
      {"tiny_prior.pt", {"train.shared_prefix_split_tokens=0", "train.activation_checkpointing=false"}},
      {"tiny_prior.pt", {"train.shared_prefix_split_tokens=0", "algorithm.micro_batch_tokens=80"}},
      {"qwen3_moe_tiny.pt", {"train.shared_prefix_split_tokens=0", "algorithm.routing_replay=old"}},
  };
  int index = 0;
  std::vector<double> saved;  // the first step's prompt_tokens_saved, per case
  for (const auto& c : cases) {
    const std::string name = "shared_train_" + std::to_string(index++);
    std::string sets;
    for (const auto& x : c.sets) sets += " " + x;
    INFO(c.model << sets);
    const auto off = test::fresh_dir(name + "_off"), on = test::fresh_dir(name + "_on");
    cli::TrainJob(run_cfg(off, c.model, c.sets), "").run();
    auto shared_sets = c.sets;
    shared_sets.push_back("train.shared_prefix=true");
    cli::TrainJob(run_cfg(on, c.model, shared_sets), "").run();
    const auto ma = test::read_metrics(off), mb = test::read_metrics(on);
    REQUIRE(ma.size() == 2);
    REQUIRE(mb.size() == 2);
    for (size_t s = 0; s < 2; ++s) {
      INFO("step " << s + 1);
      CHECK(mb[s]["reward_mean"] == ma[s]["reward_mean"]);
      for (const char* k : {"grad_norm", "seq_ratio_mean", "entropy"}) {
        INFO(k);
        CHECK(mb[s][k].get<double>() == Approx(ma[s][k].get<double>()).epsilon(1e-5).margin(1e-9));
      }
      CHECK(mb[s]["loss"].get<double>() == Approx(ma[s]["loss"].get<double>()).epsilon(1e-5).margin(1e-7));
      CHECK(mb[s]["first_minibatch_ratio_dev"].get<double>() == 0.0);
      CHECK_FALSE(ma[s].contains("prompt_tokens_saved"));
      REQUIRE(mb[s].contains("prompt_tokens_saved"));
      CHECK(mb[s]["prompt_tokens_saved"].get<double>() > 0);
    }
    saved.push_back(mb[0]["prompt_tokens_saved"].get<double>());
    const auto a = weights_of(off), b = weights_of(on);
    const auto init = model::Policy::load(test::model_path(c.model)).parameters();
    double moved = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK((a[i] - b[i]).abs().max().item<double>() < 0.02 * 3e-3);
      moved = std::max(moved, (a[i] - init[i]).abs().max().item<double>());
    }
    CHECK(moved > 1e-4);
  }
  // The split shares each group's prompt among all its rows; packed rows only while the tree mask costs no more (pairs
  // here): the split runs saved more, so they ran split.
  CHECK(saved[4] > saved[0]);
}

TEST_CASE("train.shared_prefix needs the per-layer pass", "[shared_prefix][config]") {
  const auto dir = test::fresh_dir("shared_refused");
  CHECK_THROWS_WITH(run_cfg(dir, "tiny_prior.pt", {"train.shared_prefix=true", "train.chunked_head=false",
                                                   "train.activation_checkpointing=false"}),
                    Catch::Contains("train.shared_prefix") && Catch::Contains("per-layer pass"));
}
