// Routing by data source (#66): a mixed math + code set in Skywork-OR1 / DeepScaleR-style schema through verl's
// preprocessing (tests/golden/parquet_cases.py writes mixed.parquet and its JSONL twin with pyarrow): each row graded by
// its source's verifier (reward/by_source.h), code tests read from the reference answer as verl's prime_code reads
// them, and the start-up errors.
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/reward/by_source.h"
#include "gspo/reward/factory.h"
#include "helpers.h"

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
