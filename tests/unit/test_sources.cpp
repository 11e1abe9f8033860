// Routing by data source (#66): a mixed math + code set in Skywork-OR1 / DeepScaleR-style schema through verl's
// preprocessing (tests/golden/parquet_cases.py writes mixed.parquet and its JSONL twin with pyarrow): each row graded by
// its source's verifier (reward/by_source.h), code tests read from the reference answer as verl's prime_code reads
// them, the start-up errors, and the per-source metrics against hand-computed means, over one rank and two.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <fstream>
#include <iterator>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/sharded.h"
#include "gspo/eval/summary.h"
#include "gspo/io/tensorboard.h"
#include "gspo/parallel/comm.h"
#include "gspo/reward/by_source.h"
#include "gspo/reward/factory.h"
#include "gspo/train/metrics/metrics.h"
#include "helpers.h"
#include "two_ranks.h"

using namespace gspo;

namespace {

const char* kSumProgram = "```python\na, b = map(int, input().split())\nprint(a + b)\n```";
const char* kSquareProgram = "```python\nn = int(input())\nprint(n * n)\n```";

config::Config mixed_config(const std::string& path, const std::string& extra = "") {
  return config::load_text("data: {task: jsonl, prompt_key: prompt, answer_key: reward_model.ground_truth}\n"
                           "reward: {kind: auto, workers: 1, sources: [\"deepscaler:math\"]}\n" + extra,
                           "t.yaml", {"data.path=" + path});
}

std::vector<data::Example> load(const config::Config& cfg) { return data::load_dataset(cfg.data); }

}  // namespace

TEST_CASE("a mixed math + code set, JSONL and parquet alike: each row graded by its data source's verifier",
          "[reward][sources]") {
  for (const char* file : {"parquet/mixed.jsonl", "parquet/mixed.parquet"}) {
    INFO(file);
    const auto cfg = mixed_config(test::model_path(file));
    auto rows = load(cfg);
    REQUIRE(rows.size() == 5);
    const std::vector<std::string> want = {"numina_olympiads", "taco", "deepscaler", "codeforces", "openai/gsm8k"};
    for (size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].source == want[i]);
    const auto names = data::number_sources(rows);
    CHECK(names == std::vector<std::string>{"codeforces", "deepscaler", "numina_olympiads", "openai/gsm8k", "taco"});
    CHECK(rows[0].source_id == 2);
    CHECK(rows[1].source_id == 4);
    const auto v = reward::make_verifier(cfg, rows);
    CHECK(v->name() == "by_source(codeforces:code,deepscaler:math,numina_olympiads:math,openai/gsm8k:math,taco:code)");
    // math rows: a correct boxed answer scores 1, a wrong one 0
    CHECK(v->score("so \\boxed{42}", rows[0]).reward == 1.0);
    CHECK(v->score("so \\boxed{41}", rows[0]).reward == 0.0);
    CHECK(v->score("\\boxed{\\frac{5}{6}}", rows[2]).correct);  // deepscaler: mapped by reward.sources
    CHECK(v->score("The answer is 5.", rows[4]).correct);
    // code rows: the tests in reward_model.ground_truth run in the sandbox
    const auto sum = v->score(kSumProgram, rows[1]);
    CHECK(sum.reward == 1.0);
    CHECK_THAT(sum.detail, Catch::StartsWith("2/2 tests passed"));
    CHECK(v->score(kSquareProgram, rows[1]).reward == 0.0);
    CHECK(v->score(kSquareProgram, rows[3]).reward == 1.0);
    // routing, not shape: the math row's right answer is not a program, the code row's sum not a boxed answer
    CHECK(v->score("\\boxed{3}", rows[1]).reward == 0.0);
    CHECK(v->score(kSumProgram, rows[0]).reward == 0.0);
  }
}

TEST_CASE("a data source with no verifier is refused at start-up, naming the row, the source and the known ones",
          "[reward][sources]") {
  const std::string path = test::model_path("unknown_source.jsonl");
  std::ofstream(path) << R"({"data_source": "openai/gsm8k", "question": "1+1?", "answer": "2"})" << "\n"
                      << R"({"data_source": "my_set", "question": "2+2?", "answer": "4"})" << "\n"
                      << R"({"data_source": "my_set", "question": "3+3?", "answer": "6"})" << "\n";
  auto cfg = config::load_text("data: {task: jsonl}\nreward: {kind: auto}\n", "t.yaml", {"data.path=" + path});
  const auto rows = load(cfg);
  CHECK_THROWS_AS(reward::make_verifier(cfg, rows), ConfigError);
  CHECK_THROWS_WITH(reward::make_verifier(cfg, rows),
                    Catch::Contains(path + ":2: data source 'my_set' has no verifier (2 rows with unknown sources)") &&
                        Catch::Contains("openai/gsm8k, lighteval/MATH") && Catch::Contains("taco -> code") &&
                        Catch::Contains("reward.sources (\"my_set:math\")"));
  // mapped (a prefix pattern), or not read at all: the rows are graded
  auto mapped = config::load_text("data: {task: jsonl}\nreward: {kind: auto, sources: [\"my_*:exact\"]}\n", "t.yaml",
                                  {"data.path=" + path});
  CHECK(reward::make_verifier(mapped, load(mapped))->score("4", rows[1]).correct);
  auto unread = config::load_text("data: {task: jsonl, source_key: \"\"}\nreward: {kind: auto}\n", "t.yaml",
                                  {"data.path=" + path});
  const auto plain = load(unread);
  CHECK(plain[1].source.empty());
  CHECK(reward::make_verifier(unread, plain)->name() == "math");
  // an explicit kind grades every row with it, whatever the sources
  auto math = config::load_text("data: {task: jsonl}\nreward: {kind: math}\n", "t.yaml", {"data.path=" + path});
  CHECK(reward::make_verifier(math, rows)->name() == "math");
}

TEST_CASE("a code source's row without tests, and bad reward.sources entries, are refused clearly",
          "[reward][sources][config]") {
  const std::string path = test::model_path("code_source_untested.jsonl");
  std::ofstream(path) << R"({"data_source": "apps", "question": "Print 1.", "answer": "1"})" << "\n";
  auto cfg = config::load_text("data: {task: jsonl}\nreward: {kind: auto}\n", "t.yaml", {"data.path=" + path});
  CHECK_THROWS_WITH(reward::make_verifier(cfg, load(cfg)),
                    Catch::Contains(path + ":1: data source 'apps' is graded by the code verifier, but the row has no "
                                    "tests"));
  CHECK_THROWS_WITH(config::load_text("reward: {sources: [\"gsm8k\"]}\n", "t.yaml"),
                    Catch::Contains("reward.sources entries must be \"source:kind\"") && Catch::Contains("gsm8k"));
  CHECK_THROWS_WITH(config::load_text("reward: {sources: [\"gsm8k:model\"]}\n", "t.yaml"),
                    Catch::Contains("with a kind among math, code, exact"));
  CHECK_THROWS_WITH(config::load_text("reward: {sources: [\"x:regex\"]}\n", "t.yaml"),
                    Catch::Contains("the regex verifier needs reward.regex"));
  CHECK_THROWS_WITH(config::load_text("data: {source_key: \"\"}\nreward: {sources: [\"x:math\"]}\n", "t.yaml"),
                    Catch::Contains("data.source_key is empty"));
}

namespace {

// Rank `rank`'s rows: rewards, correctness and source ids (names: a, b, c; -1 = no source).
train::StepMetrics source_rows(int rank, const std::vector<std::string>& names) {
  train::StepMetrics m;
  m.source_names = names;
  const std::vector<std::vector<double>> reward = {{1.0, 0.0, 0.5, 1.0}, {0.25, 1.0, 0.0}};
  const std::vector<std::vector<double>> source = {{0, 0, 2, -1}, {2, 0, 2}};
  for (size_t i = 0; i < reward[rank].size(); ++i) {
    m.reward.rows.push_back(reward[rank][i]);
    m.correct.rows.push_back(reward[rank][i] == 1.0 ? 1.0 : 0.0);
    m.source.rows.push_back(source[rank][i]);
    for (auto* c : {&m.advantage, &m.response_len, &m.truncated, &m.version_lag}) c->rows.push_back(0.0);
  }
  return m;
}

}  // namespace

TEST_CASE("per-source metrics are the hand-computed means and counts, gathered over two ranks", "[metrics][sources]") {
  const std::vector<std::string> names = {"a", "b", "c"};
  // Every row of both ranks: a: rewards 1, 0, 1 (rank 1's second); c: 0.5, 0.25, 0; none: 1. "b" has no rows.
  const nlohmann::json want_reward = {{"a", 2.0 / 3.0}, {"c", 0.75 / 3.0}, {"(none)", 1.0}};
  const nlohmann::json want_accuracy = {{"a", 2.0 / 3.0}, {"c", 0.0}, {"(none)", 1.0}};
  const nlohmann::json want_rows = {{"a", 3}, {"c", 3}, {"(none)", 1}};
  std::vector<train::StepMetrics> out(2);
  const auto errors = test::run_ranks(2, [&](parallel::Comm& comm, int rank) {
    out[rank] = source_rows(rank, names);
    out[rank].show(train::Shown::kSources);
    train::reduce_across_ranks(out[rank], comm);
  });
  for (const auto& e : errors) REQUIRE(e.empty());
  for (auto& m : out) {
    const auto j = nlohmann::json::parse(train::json_line(m));
    CHECK(j["reward_by_source"] == want_reward);
    CHECK(j["accuracy_by_source"] == want_accuracy);
    CHECK(j["rows_by_source"] == want_rows);
    CHECK(j["reward_mean"].get<double>() == Approx((1.0 + 0.5 + 1.0 + 0.25 + 1.0) / 7.0));
  }
  // Without sources the rows are not written, and no source column is gathered (its length is not checked).
  train::StepMetrics plain;
  plain.reward.rows = {1.0};
  plain.correct.rows = {1.0};
  plain.set_shown(config::Config{}, {});
  const auto j = nlohmann::json::parse(train::json_line(plain));
  CHECK_FALSE(j.contains("reward_by_source"));
}

TEST_CASE("TensorBoard gets one scalar a source of a per-source metric", "[metrics][sources][tensorboard]") {
  const std::string dir = "/tmp/gspo_tb_sources_" + std::to_string(getpid());
  std::string path;
  {
    io::EventWriter w(dir);
    w.metrics_line(R"({"step": 2, "reward_by_source": {"openai/gsm8k": 0.5, "taco": 0.25}, "rows_by_source": {}})");
    path = w.path();
  }
  std::ifstream in(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(b.find("reward_by_source/openai/gsm8k") != std::string::npos);
  CHECK(b.find("reward_by_source/taco") != std::string::npos);
  CHECK(b.find("rows_by_source") == std::string::npos);  // an empty object: no scalar
  core::remove_all(dir);
}

TEST_CASE("an eval summary of a mixed set splits by source, and the source travels between ranks", "[eval][sources]") {
  std::vector<eval::ProblemResult> ps(3);
  const std::vector<std::vector<char>> correct = {{1, 0}, {1, 1}, {0, 0}};
  const std::vector<std::string> source = {"taco", "openai/gsm8k", "taco"};
  for (size_t i = 0; i < ps.size(); ++i) {
    ps[i].correct = correct[i];
    ps[i].rewards.assign(correct[i].begin(), correct[i].end());
    ps[i].source = source[i];
  }
  const auto s = eval::summarize("mixed", ps, false);
  REQUIRE(s.by_source.size() == 2);
  CHECK(s.by_source[0].level == "openai/gsm8k");
  CHECK(s.by_source[0].problems == 1);
  CHECK(s.by_source[0].accuracy.avg == 1.0);
  CHECK(s.by_source[1].level == "taco");
  CHECK(s.by_source[1].problems == 2);
  CHECK(s.by_source[1].accuracy.avg == 0.25);  // (1/2 + 0/2) / 2
  const nlohmann::ordered_json j = s;
  CHECK(j["by_source"]["taco"]["avg@2"] == 0.25);
  CHECK(j["by_source"]["taco"]["pass@2"] == 0.5);
  auto unsourced = ps[0];
  unsourced.source.clear();
  const nlohmann::ordered_json plain = eval::summarize("plain", std::vector<eval::ProblemResult>{unsourced}, false);
  CHECK_FALSE(plain.contains("by_source"));  // a set whose rows name no source: as before
  const std::vector<std::string> sources = {"openai/gsm8k", "taco"};
  CHECK(eval::unpack_stats(eval::pack_stats(eval::stats_of(ps[0]), {}, sources).data(), {}, sources).source == "taco");
  CHECK(eval::unpack_stats(eval::pack_stats(eval::stats_of(unsourced), {}, sources).data(), {}, sources).source == "");
}
