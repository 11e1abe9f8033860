// The step metrics table (train/metrics/metrics.h): its rows fit their reductions, the JSONL line follows it, and the
// reduction over two or three ranks (threads, Gloo on loopback; equal or unequal rows per rank) gives what one process
// computes on all the rows.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <thread>

#include "gspo/config/options.h"
#include "gspo/parallel/comm.h"
#include "gspo/train/metrics/metrics.h"
#include "two_ranks.h"

using namespace gspo;
using train::StepMetrics;

namespace {

std::vector<std::string> table_names() {
  std::vector<std::string> names;
  for (const auto& row : nlohmann::json::parse(train::metrics_schema_json())) names.push_back(row["name"]);
  return names;
}

// Each of two ranks reduces the metrics part(rank) makes; both ranks' results (no rank failed).
template <class Part>
std::array<StepMetrics, 2> reduced_on_two_ranks(Part part) {
  std::array<StepMetrics, 2> out;
  const auto errors = test::run_two_ranks([&](parallel::Comm& comm, int rank) {
    out[rank] = part(rank);
    train::reduce_across_ranks(out[rank], comm);
  });
  REQUIRE(errors.error[0].empty());
  REQUIRE(errors.error[1].empty());
  return out;
}

}  // namespace

TEST_CASE("metrics table: every row's field can take its reduction", "[metrics]") {
  CHECK_NOTHROW(train::check_metrics_table());
  const auto names = table_names();
  for (const char* known : {"step", "reward_mean", "accuracy", "loss", "kl", "clip_tok_frac", "grad_norm", "lr",
                            "time_step_s", "world_size", "optimizer_state_mb_per_rank"})
    CHECK(std::find(names.begin(), names.end(), known) != names.end());
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());  // no name twice
}

TEST_CASE("column statistics: mean, population std, min, max: 0 for no rows", "[metrics]") {
  train::Column c;
  CHECK(c.mean() == 0);
  CHECK(c.std() == 0);
  CHECK(c.min() == 0);
  CHECK(c.max() == 0);
  c.rows = {1, 2, 3, 6};
  CHECK(c.mean() == Approx(3.0));
  CHECK(c.std() == Approx(std::sqrt((4.0 + 1.0 + 0.0 + 9.0) / 4.0)));
  CHECK(c.min() == 1);
  CHECK(c.max() == 6);
}

TEST_CASE("the JSONL line follows the table: its order, optional rows only when shown", "[metrics]") {
  StepMetrics m;
  m.step = 3;
  m.reward.rows = {0, 1, 1, 1};
  m.correct.rows = {0, 1, 0, 1};
  m.loss = {6.0, 4.0};
  m.seq_ratio_min = train::kNoValue;  // nothing updated: written as 0
  auto j = nlohmann::ordered_json::parse(train::json_line(m));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  std::vector<std::string> expected;  // the rows written always, in table order
  for (const auto& row : nlohmann::json::parse(train::metrics_schema_json()))
    if (row["shown"] == "always") expected.push_back(row["name"]);
  CHECK(expected.size() < table_names().size());
  CHECK(keys == expected);
  CHECK(j["step"].is_number_integer());
  CHECK(j["reward_mean"].get<double>() == Approx(0.75));
  CHECK(j["accuracy"].get<double>() == Approx(0.5));
  CHECK(j["loss"].get<double>() == Approx(1.5));
  CHECK(j["seq_ratio_min"].get<double>() == 0.0);

  m.show(train::Shown::kKl);
  m.show(train::Shown::kMultiRank);
  m.moe_load_imbalance = {1.5, 2.0};
  m.show(train::Shown::kMoe);
  auto k = nlohmann::json::parse(train::json_line(m));
  CHECK(k.contains("kl"));
  CHECK(k.contains("comm_frac"));
  CHECK(k["moe_load_imbalance"].size() == 2);
  CHECK_FALSE(k.contains("peak_gpu_mb"));
}

TEST_CASE("reduction over two ranks equals one process's figures on all the rows", "[metrics][dist]") {
  // One process's view: 4 rows, sums and extrema of both ranks' parts.
  auto part = [](int rank) {
    StepMetrics m;
    m.reward.rows = rank == 0 ? std::vector<double>{0.0, 1.0} : std::vector<double>{0.5, 0.25};
    m.correct.rows = rank == 0 ? std::vector<double>{0.0, 1.0} : std::vector<double>{1.0, 0.0};
    m.advantage.rows = m.response_len.rows = m.truncated.rows = m.version_lag.rows = {0.0, 0.0};  // a value per row
    m.loss = {rank == 0 ? 3.0 : 5.0, 2.0};
    m.sample_tokens = rank == 0 ? 7 : 9;
    m.sample_tokens_per_s = {rank == 0 ? 7.0 : 9.0, rank == 0 ? 2.0 : 4.0};
    m.seq_ratio_min = rank == 0 ? 0.9 : train::kNoValue;  // rank 1 updated nothing
    m.seq_ratio_max = rank == 0 ? 1.1 : -train::kNoValue;
    m.peak_rss_mb = rank == 0 ? 100 : 300;
    m.time_step_s = rank == 0 ? 1.0 : 2.0;  // rank 0's own
    return m;
  };
  auto out = reduced_on_two_ranks(part);
  for (const auto& m : out) {
    CHECK(m.reward.rows == std::vector<double>{0.0, 1.0, 0.5, 0.25});  // global row order: rank 0's rows first
    CHECK(m.correct.mean() == Approx(0.5));
    CHECK(m.loss.value() == Approx(2.0));  // (3 + 5) / (2 + 2)
    CHECK(m.sample_tokens == 16);
    CHECK(m.seq_ratio_min == Approx(0.9));
    CHECK(m.seq_ratio_max == Approx(1.1));
    CHECK(m.peak_rss_mb == 300);
  }
  CHECK(out[0].sample_tokens_per_s.value() == Approx(16.0 / 2.0));  // every rank's tokens over rank 0's time
  CHECK(out[0].time_step_s == 1.0);                                 // kLocal: untouched
  CHECK(out[1].time_step_s == 2.0);
}

TEST_CASE("gathered columns are right when the ranks hold different numbers of rows", "[metrics][dist]") {
  // Rows per rank as a streaming source can leave them: 3, none and 2; and 1 and 4 on two ranks.
  for (const std::vector<int> counts : {std::vector<int>{3, 0, 2}, std::vector<int>{1, 4}}) {
    const int W = static_cast<int>(counts.size());
    auto value = [](int rank, int i) { return 0.37 * rank + 1.25 * i * i - 0.5; };  // distinct, unordered
    auto part = [&](int rank) {
      StepMetrics m;
      for (int i = 0; i < counts[rank]; ++i) {
        const double v = value(rank, i);
        m.reward.rows.push_back(v);
        m.correct.rows.push_back(i % 2);
        m.advantage.rows.push_back(-v);
        m.response_len.rows.push_back(10 + rank + i);
        m.truncated.rows.push_back(rank == 0 ? 1 : 0);
        m.version_lag.rows.push_back(i % 3);
      }
      return m;
    };
    StepMetrics whole;  // one process holding every row, in rank order
    for (int r = 0; r < W; ++r) {
      const auto m = part(r);
      for (auto [to, from] : {std::pair{&whole.reward, &m.reward}, {&whole.correct, &m.correct},
                              {&whole.advantage, &m.advantage}, {&whole.response_len, &m.response_len},
                              {&whole.truncated, &m.truncated}, {&whole.version_lag, &m.version_lag}})
        to->rows.insert(to->rows.end(), from->rows.begin(), from->rows.end());
    }
    std::vector<StepMetrics> out(static_cast<size_t>(W));
    const auto errors = test::run_ranks(W, [&](parallel::Comm& comm, int rank) {
      out[rank] = part(rank);
      train::reduce_across_ranks(out[rank], comm);
    });
    for (const auto& e : errors) REQUIRE(e.empty());
    const auto expect = nlohmann::json::parse(train::json_line(whole));
    for (auto& m : out) {
      CHECK(m.reward.rows == whole.reward.rows);
      CHECK(m.response_len.rows == whole.response_len.rows);
      CHECK(m.version_lag.rows == whole.version_lag.rows);  // the async lag column travels like the others
      const auto got = nlohmann::json::parse(train::json_line(m));
      for (const char* key : {"reward_mean", "reward_std", "reward_min", "reward_max", "accuracy", "advantage_mean",
                              "advantage_std", "advantage_min", "advantage_max", "response_len_mean",
                              "response_len_min", "response_len_max", "truncated_frac"})
        CHECK(got[key].get<double>() == expect[key].get<double>());
    }
  }
}

TEST_CASE("which rows are written is decided by one table from the config and the step", "[metrics]") {
  config::Config c;
  c.algorithm.mismatch_metrics = false;  // (on by default)
  StepMetrics m;
  m.set_shown(c, {});
  for (size_t i = 1; i < static_cast<size_t>(train::Shown::kCount); ++i)
    CHECK_FALSE(m.shown(static_cast<train::Shown>(i)));  // only the rows written always
  CHECK(m.shown(train::Shown::kAlways));
  c.algorithm.mismatch_metrics = true;
  m.set_shown(c, {});
  CHECK(m.shown(train::Shown::kMismatch));
  c.algorithm.kl_coef = 0.05;
  c.async.partial_rollout = true;
  m.moe_load_imbalance = {1.0};
  m.set_shown(c, {true, 2, false});
  CHECK(m.shown(train::Shown::kKl));
  CHECK(m.shown(train::Shown::kCuda));
  CHECK(m.shown(train::Shown::kMultiRank));
  CHECK(m.shown(train::Shown::kMoe));
  CHECK(m.shown(train::Shown::kStale));  // partial rollouts: rows may be sampled by older weights
  CHECK(m.shown(train::Shown::kPartial));
  CHECK_FALSE(m.shown(train::Shown::kAsync));
  CHECK_FALSE(m.shown(train::Shown::kRouting));
  CHECK(std::string(train::name_of(train::Shown::kExperts)) == "distributed.expert_parallel > 1");
}

TEST_CASE("each reward component's mean and spread are over every rank's rows, written as lists", "[metrics][dist]") {
  // Two components on two ranks of 2 rows each; one process would see the 4 rows of each column.
  auto part = [](int rank) {
    StepMetrics m;
    m.reward.rows = m.correct.rows = m.advantage.rows = m.response_len.rows = m.truncated.rows = m.version_lag.rows =
        {0.0, 0.0};
    m.reward_components.resize(2);
    m.reward_components[0].rows = rank == 0 ? std::vector<double>{1.0, 3.0} : std::vector<double>{5.0, 7.0};
    m.reward_components[1].rows = rank == 0 ? std::vector<double>{0.0, 1.0} : std::vector<double>{1.0, 1.0};
    return m;
  };
  auto out = reduced_on_two_ranks(part);
  for (auto& m : out) {
    m.show(train::Shown::kComponents);
    const auto j = nlohmann::json::parse(train::json_line(m));
    REQUIRE(j["reward_components_mean"].size() == 2);
    CHECK(j["reward_components_mean"][0].get<double>() == Approx(4.0));   // (1 + 3 + 5 + 7) / 4
    CHECK(j["reward_components_mean"][1].get<double>() == Approx(0.75));
    CHECK(j["reward_components_std"][0].get<double>() == Approx(std::sqrt(5.0)));  // population: (9+1+1+9)/4
    CHECK(j["reward_components_std"][1].get<double>() == Approx(std::sqrt(0.1875)));
  }
  StepMetrics none;
  CHECK_FALSE(nlohmann::json::parse(train::json_line(none)).contains("reward_components_mean"));  // not shown
}
