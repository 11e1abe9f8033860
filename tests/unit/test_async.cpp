// Asynchronous training's pieces (docs/async.md): the version schedule and who sends whom which prompts
// (train/async/async_schedule.h), a scored share through the wire and cut into groups (train/async/scored_wire.h), a rollout rank's
// figures folded into a trainer's metrics, and the process-group pieces it travels on (a subgroup, point to point,
// the weight sync).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <set>

#include "gspo/config/options.h"
#include "gspo/config/validate.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/weight_sync.h"
#include "gspo/reward/factory.h"
#include "gspo/rollout/sampler.h"
#include "gspo/rollout/sampling_config.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/async/async_schedule.h"
#include "gspo/train/metrics/metrics.h"
#include "gspo/train/sources/rollout_source.h"
#include "gspo/train/async/scored_wire.h"
#include "helpers.h"
#include "two_ranks.h"

using namespace gspo;

namespace {

// A real scored round of the tiny model: 4 prompts x 3 samples, lengths that differ (temperature 1, EOS possible).
train::Scored sample_round() {
  config::Config c;
  c.model.path = test::model_path("tiny.pt");
  c.rollout.prompts_per_step = 4;
  c.rollout.group_size = 3;
  c.rollout.max_new_tokens = 6;
  c.rollout.temperature = 1.0;
  c.reward.kind = config::RewardKind::kRegex;
  c.reward.regex = "[02468]";
  c.logging.progress = false;
  parallel::Comm comm{parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU};
  auto policy = test::load_tiny("tiny.pt");
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), c.model.path);
  const auto examples = data::make_arithmetic(20, 9, "+", 1);
  auto verifier = reward::make_verifier(c);
  rollout::Sampler sampler(policy, *tok, rollout::sampling_params(c));
  train::InProcessSource source(c, policy, nullptr, *tok, examples, *verifier, sampler, comm);
  data::Cursor cursor(20, true, 7);
  train::StepMetrics m;
  return source.next_round(cursor, {2, 1}, m);
}

void check_rows_equal(const train::Scored& a, int64_t a_row, const train::Scored& b, int64_t b_row) {
  const auto& x = a.batch;
  const auto& y = b.batch;
  CHECK(x.response_ids[a_row] == y.response_ids[b_row]);
  CHECK(x.response_text[a_row] == y.response_text[b_row]);
  CHECK(x.response_lengths[a_row] == y.response_lengths[b_row]);
  CHECK((x.finish[a_row] == y.finish[b_row]));
  CHECK(a.rewards[a_row] == b.rewards[b_row]);
  CHECK(a.versions[a_row] == b.versions[b_row]);
  // Real prompt tokens (right-aligned) and response columns, whatever the padding.
  const int64_t R = x.response_lengths[a_row];
  CHECK(torch::equal(x.behaviour_logprobs[a_row].narrow(0, 0, R), y.behaviour_logprobs[b_row].narrow(0, 0, R)));
  CHECK(torch::equal(x.loss_mask[a_row].narrow(0, 0, R), y.loss_mask[b_row].narrow(0, 0, R)));
  const auto prompt = [](const rollout::RolloutBatch& b, int64_t r) {
    auto mask = b.attention_mask[r].narrow(0, 0, b.prompt_len).to(torch::kBool);
    return b.input_ids[r].narrow(0, 0, b.prompt_len).masked_select(mask);
  };
  CHECK(torch::equal(prompt(x, a_row), prompt(y, b_row)));
}

}  // namespace

TEST_CASE("async schedule: batch j is sampled by version max(start, ceil((j - S) / n) n), never more than S behind",
          "[async]") {
  config::AsyncOptions a;
  a.max_staleness = 0;
  for (int64_t j = 0; j < 6; ++j) CHECK(train::sampling_version(j, a, 0) == j);  // synchronous
  a.max_staleness = 1;
  CHECK(train::sampling_version(0, a, 0) == 0);
  CHECK(train::sampling_version(1, a, 0) == 0);
  CHECK(train::sampling_version(5, a, 0) == 4);
  CHECK(train::sampling_version(5, a, 5) == 5);  // a resume at step 5 has no older weights
  a.max_staleness = 2;
  a.sync_every = 3;
  CHECK(train::sampling_version(4, a, 0) == 3);  // ceil(2 / 3) * 3
  CHECK(train::sampling_version(5, a, 0) == 3);
  CHECK(train::sampling_version(6, a, 0) == 6);  // ceil(4 / 3) * 3 = 6: lag 0
  for (int64_t S = 0; S <= 4; ++S)
    for (int64_t n = 1; n <= S + 1; ++n)
      for (int64_t start = 0; start <= 3; ++start)
        for (int64_t j = start; j < 20; ++j) {
          a.max_staleness = S, a.sync_every = n;
          const int64_t v = train::sampling_version(j, a, start);
          INFO("S " << S << " n " << n << " start " << start << " j " << j << " v " << v);
          CHECK(v <= j);
          CHECK(j - v <= S);
          CHECK((v == start || v % n == 0));
          if (j > start) CHECK(train::sampling_version(j - 1, a, start) <= v);  // asked for in order
        }
}

TEST_CASE("async schedule with partial rollouts: batches are sampled h versions fresher, h = ceil(F / B) - 1",
          "[async][partial]") {
  config::Config c;
  c.rollout.prompts_per_step = 4;
  c.distributed.rollout_ranks = 1;
  c.async.partial_rollout = true;
  c.async.max_staleness = 3;
  CHECK(config::prompts_in_flight(c) == 8);  // beside rollout ranks: min(2, S + 1) x B
  CHECK(config::carry_steps(c) == 1);
  c.distributed.rollout_ranks = 0;
  CHECK(config::prompts_in_flight(c) == 16);  // synchronous: (S + 1) x B, batches never sampled ahead
  CHECK(config::carry_steps(c) == 3);
  for (int64_t F : {4, 5, 8, 9, 12, 16}) {
    c.async.prompts_in_flight = F;
    const int64_t h = config::carry_steps(c);
    CHECK(h == (F + 3) / 4 - 1);
    CHECK(F - h * 4 <= 4);  // the groups a batch must end fit one batch (partial_source.h)
    for (int64_t j = 0; j < 12; ++j) {
      const int64_t v = train::sampling_version(j, c.async, 0, h);
      CHECK(j - v <= c.async.max_staleness - h);  // fresh groups leave h versions of the bound for carrying
    }
  }
  c.async.partial_rollout = false;
  CHECK(config::carry_steps(c) == 0);
}

TEST_CASE("async layout: every prompt of a batch reaches exactly one trainer from exactly one rollout rank",
          "[async]") {
  for (auto [W, K, B] : std::vector<std::array<int64_t, 3>>{{2, 1, 4}, {3, 1, 6}, {3, 2, 6}, {5, 2, 12}, {7, 3, 12}}) {
    config::Config c;
    c.distributed.rollout_ranks = K;
    c.rollout.prompts_per_step = B;
    const train::AsyncLayout l(c, W);
    std::vector<int> seen(static_cast<size_t>(B), 0);
    for (int64_t r = 0; r < K; ++r)
      for (int64_t t = 0; t < W - K; ++t) {
        const auto [first, last] = l.shared(r, t);
        for (int64_t p = first; p < last; ++p) {
          ++seen[static_cast<size_t>(p)];
          CHECK(p >= l.trainer_prompts(t).first);
          CHECK(p < l.trainer_prompts(t).second);
        }
      }
    for (int s : seen) CHECK(s == 1);
    for (int64_t r = 0; r < K; ++r) {
      const int64_t t = l.metrics_trainer(r);  // the first trainer r sends to
      CHECK(l.shared(r, t).first == l.rollout_prompts(r).first);
    }
  }
}

TEST_CASE("a scored share survives the wire: every tensor, list and figure read back equal", "[async]") {
  train::Share s;
  s.batch = 7;
  s.scored = sample_round();
  s.scored.components.assign(s.scored.rewards.size(), {0.5, 1.0});
  s.scored.components[1] = {};  // lists of any length
  s.scored.sources.assign(s.scored.rewards.size(), -1.0);
  s.scored.sources[0] = 3.0;  // (a row's data source id)
  s.metrics = {1.5, -2.0, 0.0, 3.25};
  const auto back = train::unpack_share(train::pack_share(s));
  const auto& a = s.scored.batch;
  const auto& b = back.scored.batch;
  CHECK(back.batch == 7);
  CHECK(torch::equal(a.input_ids, b.input_ids));
  CHECK(torch::equal(a.attention_mask, b.attention_mask));
  CHECK(torch::equal(a.response_mask, b.response_mask));
  CHECK(torch::equal(a.loss_mask, b.loss_mask));
  CHECK(torch::equal(a.behaviour_logprobs, b.behaviour_logprobs));
  CHECK(a.prompt_len == b.prompt_len);
  CHECK(a.group_size == b.group_size);
  CHECK(a.response_lengths == b.response_lengths);
  CHECK((a.finish == b.finish));
  CHECK(a.response_ids == b.response_ids);
  CHECK(a.response_text == b.response_text);
  CHECK(s.scored.rewards == back.scored.rewards);
  CHECK(s.scored.correct == back.scored.correct);
  CHECK(s.scored.penalty == back.scored.penalty);
  CHECK(s.scored.components == back.scored.components);
  CHECK(back.scored.versions == std::vector<int64_t>(a.num_rows(), 2));  // the round's version, every row
  CHECK(s.scored.sources == back.scored.sources);
  CHECK(s.metrics == back.metrics);
  auto junk = torch::randint(0, 255, {100}, torch::kUInt8);
  CHECK_THROWS_AS(train::unpack_share(junk), DistributedError);
}

TEST_CASE("groups cut out of a round and joined again are the round's rows, padded as a rank sampling only them",
          "[async]") {
  const auto s = sample_round();
  const int64_t G = s.batch.group_size, pad = 0;
  const auto head = train::slice_groups(s, 0, 1, pad);
  const auto tail = train::slice_groups(s, 1, 3, pad);
  REQUIRE(head.batch.num_rows() == G);
  REQUIRE(tail.batch.num_rows() == 3 * G);
  for (const auto* part : {&head, &tail}) {  // padding cut to the part's own longest prompt and response
    const auto& b = part->batch;
    CHECK(b.prompt_len == b.attention_mask.narrow(1, 0, b.prompt_len).sum(1).max().item<int64_t>());
    CHECK(b.response_mask.size(1) == *std::max_element(b.response_lengths.begin(), b.response_lengths.end()));
    CHECK(b.input_ids.size(1) == b.prompt_len + b.response_mask.size(1));
  }
  for (int64_t r = 0; r < G; ++r) check_rows_equal(s, r, head, r);
  for (int64_t r = 0; r < 3 * G; ++r) check_rows_equal(s, G + r, tail, r);
  const auto joined = train::join_groups({head, tail}, pad);
  REQUIRE(joined.batch.num_rows() == s.batch.num_rows());
  for (int64_t r = 0; r < s.batch.num_rows(); ++r) check_rows_equal(s, r, joined, r);
  CHECK(joined.batch.prompt_len == s.batch.prompt_len);
  CHECK(joined.versions == s.versions);
  CHECK(joined.sources == s.sources);
}

TEST_CASE("a rollout rank's figures fold into a trainer's metrics by each row's reduction", "[async][metrics]") {
  train::StepMetrics trainer, rollout;
  trainer.time_update_s = 2.0;       // the trainer's own
  trainer.kv_cache_mb = 1.0;         // kMax
  trainer.prefill_tokens = 5;        // kSum
  rollout.time_sample_s = 3.5;       // kLocal: the trainer has none
  rollout.kv_cache_mb = 4.0;
  rollout.prefill_tokens = 7;
  rollout.rollout_slot_util = {3, 4};  // kMean
  rollout.rollout_idle = {1, 10};
  rollout.seq_ratio_min = 0.5;       // kMin (the trainer's is "none": infinity)
  rollout.step = 99;                 // kSame: left alone
  train::StepMetrics other = trainer;
  train::merge_scalars(other, train::scalar_values(rollout), false);  // another rollout rank: its own figures stay
  CHECK(other.time_sample_s == 0);
  CHECK(other.prefill_tokens == 12);
  train::merge_scalars(trainer, train::scalar_values(rollout), true);
  CHECK(trainer.time_update_s == 2.0);
  CHECK(trainer.time_sample_s == 3.5);
  CHECK(trainer.kv_cache_mb == 4.0);
  CHECK(trainer.prefill_tokens == 12);
  CHECK(trainer.rollout_slot_util.sum == 3);
  CHECK(trainer.rollout_slot_util.count == 4);
  CHECK(trainer.rollout_idle.value() == Approx(0.1));
  CHECK(trainer.seq_ratio_min == 0.5);
  CHECK(trainer.step == 0);
  CHECK_THROWS(train::merge_scalars(trainer, {1.0, 2.0}, true));
}

TEST_CASE("a subgroup's collectives, point-to-point messages in order, and the weight sync in bf16 buckets",
          "[async][dist]") {
  auto model = test::load_tiny("tiny.pt");
  std::vector<at::Tensor> params;
  for (auto& p : model.parameters()) params.push_back(p.detach().clone());
  const auto errors = test::run_ranks(3, [&](parallel::Comm& world, int rank) {
    // Trainers {0, 1}, one rollout rank {2} (a group of one: identities).
    const std::vector<int64_t> members = rank < 2 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{2};
    parallel::Comm group(world, members, rank < 2 ? "trainers" : "rollout");
    CHECK(group.world_size() == static_cast<int64_t>(members.size()));
    CHECK(group.rank() == (rank < 2 ? rank : 0));
    auto x = torch::tensor({static_cast<double>(rank + 1)});
    group.all_reduce(x);
    CHECK(x.item<double>() == (rank < 2 ? 3.0 : 3.0));  // 1 + 2 on the trainers; 3 alone on the rollout rank
    if (rank == 2) {  // two messages on one tag arrive in the order sent, a third on another tag apart
      auto a = world.send_async(torch::tensor({11, 12}), 0, 5, "test");
      auto b = world.send_async(torch::tensor({21, 22, 23}), 0, 5, "test");
      world.send(torch::tensor({31}), 0, 6, "test");
      a.wait(), b.wait();
    }
    if (rank == 0) {
      auto third = torch::empty({1}, torch::kLong);
      world.recv(third, 2, 6, "test");
      auto first = torch::empty({2}, torch::kLong), second = torch::empty({3}, torch::kLong);
      world.recv(first, 2, 5, "test");
      world.recv(second, 2, 5, "test");
      CHECK(first[1].item<int64_t>() == 12);
      CHECK(second[2].item<int64_t>() == 23);
      CHECK(third[0].item<int64_t>() == 31);
      parallel::WeightSender sender(world, 9);
      sender.send(params, {1, 2}, torch::kBFloat16, 4096);  // small buckets: many of them
      sender.wait();
    } else {
      std::vector<at::Tensor> mine;
      for (const auto& p : params) mine.push_back(torch::zeros_like(p));
      const double bytes = parallel::receive_weights(world, 0, 9, mine, torch::kBFloat16, 4096, 30);
      double expected = 0;
      for (size_t i = 0; i < params.size(); ++i) {
        CHECK(torch::equal(mine[i], params[i].to(torch::kBFloat16).to(torch::kFloat)));
        expected += 2.0 * static_cast<double>(params[i].numel());
      }
      CHECK(bytes == expected);
    }
  });
  for (const auto& e : errors) CHECK(e == "");
  CHECK(parallel::weight_buckets(params, torch::kBFloat16, 4096).size() > 3);
}
