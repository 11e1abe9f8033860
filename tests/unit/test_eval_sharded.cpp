// Validation sharded over ranks: each rank's contiguous block of problems, the per-problem statistics packed into
// fixed rows and all-gathered in problem order, the same summary on every rank and as one process computes it.
#include <catch2/catch.hpp>

#include "gspo/config/load.h"
#include "gspo/data/dataset.h"
#include "gspo/parallel/comm.h"
#include "gspo/eval/sharded.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/tokenizer.h"
#include "helpers.h"
#include "two_ranks.h"

using namespace gspo;

TEST_CASE("shards are contiguous blocks that cover every problem once", "[eval][dist]") {
  for (size_t P : {0, 1, 5, 7, 64})
    for (int64_t W : {1, 2, 3, 8}) {
      size_t next = 0, smallest = P, largest = 0;
      for (int64_t r = 0; r < W; ++r) {
        const auto [b, e] = eval::shard_of(P, r, W);
        CHECK(b == next);
        next = e;
        smallest = std::min(smallest, e - b);
        largest = std::max(largest, e - b);
      }
      CHECK(next == P);
      CHECK(largest - smallest <= 1);
    }
}

TEST_CASE("problem statistics survive packing into a row", "[eval][dist]") {
  eval::ProblemStats s;
  s.n = 8;
  s.c = 3;
  s.majority_correct = true;
  s.reward_sum = 3.25;
  s.tokens_sum = 1234;
  s.tokens_max = 400;
  s.difficulty = "medium";
  s.failures = {{"timeout", 2}, {"wrong answer", 2}, {"something new", 1}};
  s.tool_samples = 8, s.tool_calls = 11, s.tool_calling = 6, s.tool_failed = 2;
  const std::vector<std::string> levels = {"easy", "hard", "medium"};
  const auto row = eval::pack_stats(s, levels);
  REQUIRE(row.size() == eval::packed_width());
  const auto back = eval::unpack_stats(row.data(), levels);
  CHECK(back.n == 8);
  CHECK(back.c == 3);
  CHECK(back.majority_correct);
  CHECK(back.reward_sum == 3.25);
  CHECK(back.tokens_sum == 1234);
  CHECK(back.tokens_max == 400);
  CHECK(back.difficulty == "medium");
  CHECK(back.failures == std::map<std::string, int64_t>{{"other", 1}, {"timeout", 2}, {"wrong answer", 2}});
  CHECK((back.tool_samples == 8 && back.tool_calls == 11 && back.tool_calling == 6 && back.tool_failed == 2));
}

TEST_CASE("a set evaluated on two ranks gives every rank the one-process summary", "[eval][dist]") {
  // Greedy sampling: the only difference between the runs is the batch shapes (a rank samples its own block).
  // An argmax could flip on a near-tie across shapes, so avg@K may differ by at most one sample's share.
  auto cfg = config::load_text("data: {task: jsonl, path: x.jsonl}\nreward: {kind: math}\nrollout: {prompts_per_step: 3, "
                               "max_new_tokens: 6}\neval: {samples: 2, temperature: 0}\n", "t.yaml");
  const std::string set_path = std::string(GSPO_SOURCE_DIR) + "/data/math_sample.jsonl";
  // Each row labelled by its index (as a difficulty level), so the gathered statistics show their order.
  auto summary_on = [&](parallel::Comm& comm, std::vector<eval::ProblemStats>* gathered) -> nlohmann::ordered_json {
    auto policy = model::Policy::load(test::model_path("tiny.pt"), c10::kCPU);
    auto tok = tokenizer::from_spec(policy.tokenizer_json(), policy.path());
    const auto budget = eval::eval_prompt_budget(cfg, policy.manifest().max_seq_len, policy.path());
    auto set = eval::load_eval_set(cfg, set_path, *tok, budget, false);
    set.rows.resize(7);
    for (size_t i = 0; i < set.rows.size(); ++i) set.rows[i].difficulty = "row" + std::to_string(i);
    eval::Grader grader(cfg, set.rows);
    eval::Evaluator evaluator(cfg, policy, *tok);
    return eval::evaluate_sharded(evaluator, set, 0, grader, eval::Standings(), comm, gathered);
  };
  parallel::LaunchEnv solo;
  parallel::Comm one(solo, config::DistributedOptions{}, c10::kCPU);
  std::vector<eval::ProblemStats> single_stats, stats[2];
  const auto single = summary_on(one, &single_stats);
  nlohmann::ordered_json out[2];
  const auto errors =
      test::run_two_ranks([&](parallel::Comm& comm, int rank) { out[rank] = summary_on(comm, &stats[rank]); });
  REQUIRE(errors.error[0].empty());
  REQUIRE(errors.error[1].empty());
  CHECK(out[0] == out[1]);  // the same gathered rows, summarised the same way
  CHECK(out[0]["problems"] == 7);
  CHECK(out[0]["samples_per_problem"] == 2);
  CHECK(out[0]["response_tokens_total"].get<int64_t>() > 0);
  const double one_sample = 1.0 / (7 * 2);
  CHECK(std::abs(out[0]["avg@2"].get<double>() - single["avg@2"].get<double>()) <= one_sample + 1e-12);
  int64_t failed = 0;
  for (const auto& [why, n] : out[0]["failures"].items()) failed += n.get<int64_t>();
  CHECK(static_cast<double>(failed) == Approx((1.0 - out[0]["avg@2"].get<double>()) * 14).margin(1e-9));
  // Every problem's statistics in row order on both ranks (what validation's CodeElo rating reads: first_accepted).
  REQUIRE(single_stats.size() == 7);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(stats[r].size() == 7);
    for (size_t i = 0; i < 7; ++i) {
      INFO("rank " << r << " row " << i);
      CHECK(stats[r][i].difficulty == "row" + std::to_string(i));
      CHECK(stats[r][i].n == 2);
      CHECK(stats[r][i].first_accepted == stats[0][i].first_accepted);
      CHECK((stats[r][i].first_accepted >= 0) == (stats[r][i].c > 0));
    }
  }
}
