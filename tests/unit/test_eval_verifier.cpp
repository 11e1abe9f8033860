// Each eval set names its own verifier (#66 item 4): eval.datasets entries as paths or {path, verifier}; a set left
// at auto is graded by its rows whatever the training reward is, "reward" asks for the training reward.
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/eval/grade.h"
#include "helpers.h"

using namespace gspo;
using test::config_error_of;

TEST_CASE("eval.datasets takes paths and {path, verifier} mappings", "[eval][config]") {
  auto cfg = config::load_text("eval:\n  datasets:\n    - aime.jsonl\n    - {path: lcb.jsonl, verifier: code}\n"
                               "    - {path: gsm.jsonl, verifier: reward}\n", "run.yaml");
  REQUIRE(cfg.eval.datasets.size() == 3);
  CHECK(cfg.eval.datasets[0].path == "aime.jsonl");
  CHECK(cfg.eval.datasets[0].verifier == "auto");
  CHECK(cfg.eval.datasets[1].verifier == "code");
  CHECK(cfg.eval.datasets[2].verifier == "reward");
  CHECK(cfg.origin.at("eval.datasets[0]") == "run.yaml:3");
  auto set = config::load_text("", "run.yaml", {"eval.datasets=[a.jsonl, b.parquet]"});
  REQUIRE(set.eval.datasets.size() == 2);
  CHECK(set.eval.datasets[1].path == "b.parquet");
  CHECK_THAT(config_error_of("eval:\n  datasets:\n    - {path: a.jsonl, verifier: maths}\n"),
             Catch::Contains("eval.datasets[0].verifier must be one of auto, reward, math") &&
                 Catch::Contains("did you mean 'math'?"));
  CHECK_THAT(config_error_of("eval:\n  datasets:\n    - {path: a.jsonl, verifier: regex}\n"),
             Catch::Contains("run.yaml:3: eval.datasets[0].verifier regex grades with reward.regex, which is empty"));
  CHECK_THAT(config_error_of("eval:\n  datasets:\n    - {verifier: math}\n"),
             Catch::Contains("eval.datasets[0].path must name a problem set"));
  CHECK_THAT(config_error_of("eval:\n  datasets:\n    - [a.jsonl]\n"),
             Catch::Contains("eval.datasets[0] must be a mapping of keys"));
}

TEST_CASE("a set's verifier, not the training reward, grades it unless it asks for the reward", "[eval]") {
  // The training reward is a regex that any digit satisfies: a wrong answer scores 1 under it, 0 under math.
  auto cfg = config::load_text("data: {task: jsonl, path: x.jsonl}\nreward: {kind: regex, regex: '[0-9]'}\n", "run.yaml");
  data::Example row;
  row.id = "set.jsonl:1";
  row.prompt = "What is 6 * 7?";
  row.answer = "42";
  const std::vector<data::Example> rows{row};
  const std::vector<std::vector<std::string>> responses{{"The answer is \\boxed{41}.", "So \\boxed{42}."}};
  const std::vector<std::vector<int64_t>> tokens{{{}, {}}};
  const std::vector<const data::Example*> problems{&rows[0]};

  eval::Grader by_reward(eval::grading_config(cfg, "reward"), rows);
  CHECK(by_reward.verifier->name() == "regex");
  const auto r = by_reward.grade(problems, responses, tokens);
  CHECK(r[0].rewards == std::vector<double>{1.0, 1.0});

  eval::Grader by_rows(eval::grading_config(cfg, "auto"), rows);
  CHECK(by_rows.verifier->name() == "math");
  CHECK(by_rows.math);  // majority voting applies
  const auto m = by_rows.grade(problems, responses, tokens);
  CHECK(m[0].rewards == std::vector<double>{0.0, 1.0});
  CHECK(m[0].correct == std::vector<char>{0, 1});

  auto with_parts = cfg;
  with_parts.reward.components = {"math:1", "format:0.1"};
  const auto exact = eval::grading_config(with_parts, "exact");
  CHECK(exact.reward.kind == config::RewardKind::kExact);
  CHECK(exact.reward.components.empty());
  CHECK(eval::grading_config(with_parts, "reward").reward.components.size() == 2);
}
