// reward.kind auto on a JSONL dataset that mixes math rows and code rows: each row is graded by the verifier that
// fits it (regression: the whole dataset used to be graded by the first row's verifier), and an explicit "code" on
// rows without tests is refused before any sampling, naming the row.
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/reward/factory.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::vector<data::Example> mixed_rows() {
  const std::string path = test::model_path("mixed_rows.jsonl");
  std::ofstream(path) << R"({"prompt": "What is 2+2?", "answer": "4"})" << "\n"
                      << R"({"prompt": "Print the sum of two integers.", "tests": {"type": "stdio", "cases": [)"
                      << R"({"input": "2 3\n", "output": "5\n"}, {"input": "10 -4\n", "output": "6\n"}]}})" << "\n"
                      << R"({"prompt": "What is 3*3?", "answer": "9"})" << "\n";
  return data::load_jsonl(path, "prompt", "answer");
}

const char* kGoodProgram = "```python\na, b = map(int, input().split())\nprint(a + b)\n```";

}  // namespace

TEST_CASE("reward.kind auto grades a mixed dataset row by row (math rows as math, code rows by running tests)",
          "[reward]") {
  auto rows = mixed_rows();
  REQUIRE(rows.size() == 3);
  const auto cov = data::code_test_coverage(rows);
  CHECK(cov.with_tests == 1);
  CHECK(cov.without_tests == 2);
  auto cfg = config::load_text("data: {task: jsonl}\nreward: {kind: auto, workers: 1}\n", "t.yaml",
                               {"data.path=" + test::model_path("mixed_rows.jsonl")});
  auto v = reward::make_verifier(cfg, rows);
  CHECK(v->score("so the answer is \\boxed{4}", rows[0]).correct);
  CHECK_FALSE(v->score("\\boxed{5}", rows[0]).correct);
  CHECK(v->score(kGoodProgram, rows[1]).correct);
  CHECK_FALSE(v->score("```python\nprint(5)\n```", rows[1]).correct);
  CHECK(v->score("\\boxed{9}", rows[2]).correct);
}

TEST_CASE("reward.kind code on rows without tests is refused up front, naming the first such row", "[reward]") {
  auto rows = mixed_rows();
  auto cfg = config::load_text("data: {task: jsonl}\nreward: {kind: code}\n", "t.yaml",
                               {"data.path=" + test::model_path("mixed_rows.jsonl")});
  CHECK_THROWS_AS(reward::make_verifier(cfg, rows), ConfigError);
  CHECK_THROWS_WITH(reward::make_verifier(cfg, rows), Catch::Contains("mixed_rows.jsonl:1") &&
                                                         Catch::Contains("2 rows without tests"));
}
