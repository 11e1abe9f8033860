// pass@k against the exact binomial formula, majority voting, summaries; external and weighted verifiers.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/eval/summary.h"
#include "gspo/reward/verifier.h"
#include "configured_paths.h"

using namespace gspo;

namespace {
// Independent reference: 1 - C(n-c, k) / C(n, k) through log-gamma.
double exact_pass(int n, int c, int k) {
  if (n - c < k) return 1.0;
  auto lc = [](int a, int b) { return std::lgamma(a + 1.0) - std::lgamma(b + 1.0) - std::lgamma(a - b + 1.0); };
  return 1.0 - std::exp(lc(n - c, k) - lc(n, k));
}
}  // namespace

TEST_CASE("unbiased pass@k matches the binomial formula", "[eval]") {
  for (int n : {1, 4, 16, 64})
    for (int c = 0; c <= n; c += std::max(1, n / 5))
      for (int k = 1; k <= n; k *= 2) {
        INFO("n=" << n << " c=" << c << " k=" << k);
        CHECK(eval::pass_at_k(n, c, k) == Approx(exact_pass(n, c, k)).margin(1e-12));
      }
  CHECK(eval::pass_at_k(10, 0, 5) == 0.0);
  CHECK(eval::pass_at_k(10, 10, 1) == 1.0);
  CHECK(eval::pass_at_k(10, 3, 1) == Approx(0.3));
}

TEST_CASE("majority vote and summaries", "[eval]") {
  CHECK(eval::majority_vote({"1", "2", "2", "", "1", "2"}) == "2");
  CHECK(eval::majority_vote({"a", "b"}) == "a");  // ties: first seen
  CHECK(eval::majority_vote({"", ""}).empty());
  eval::ProblemResult a;
  a.correct = {1, 0, 0, 0};
  a.rewards = {1, 0, 0, 0};
  a.tokens = {3, 4, 5, 6};
  a.majority_correct = true;
  a.failures = {"", "wrong answer", "timeout", "timeout"};
  a.difficulty = "easy";
  eval::ProblemResult b;
  b.correct = {0, 0, 0, 0};
  b.rewards = {0, 0, 0, 0};
  b.tokens = {1, 1, 1, 1};
  b.failures = {"no code found", "no code found", "wrong answer", ""};  // "" on a wrong sample counts as wrong answer
  b.difficulty = "hard";
  eval::ProblemResult c = b;
  c.difficulty = "easy";
  const nlohmann::ordered_json s = eval::summarize("set", {a, b}, true);
  CHECK(s["problems"] == 2);
  CHECK(s["avg@4"].get<double>() == Approx(0.125));
  CHECK(s["pass@1"].get<double>() == Approx(0.125));
  CHECK(s["pass@4"].get<double>() == Approx(0.5));
  CHECK(s["cons@4"].get<double>() == Approx(0.5));
  CHECK(s["response_tokens_max"] == 6);
  CHECK(s["failures"].dump() == R"({"no code found":2,"timeout":2,"wrong answer":3})");
  // by difficulty: each level's own problems; the levels' problem counts add up to the set's
  const auto summary_t = eval::summarize("set", {a, b, c}, true);
  const nlohmann::ordered_json t = summary_t;
  CHECK(t["by_difficulty"]["easy"]["problems"] == 2);
  CHECK(t["by_difficulty"]["easy"]["avg@4"].get<double>() == Approx(0.125));
  CHECK(t["by_difficulty"]["easy"]["pass@4"].get<double>() == Approx(0.5));
  CHECK(t["by_difficulty"]["hard"]["problems"] == 1);
  CHECK(t["by_difficulty"]["hard"]["avg@4"].get<double>() == 0.0);
  CHECK(t["by_difficulty"]["hard"]["cons@4"].get<double>() == 0.0);
  const auto table = eval::format_table({summary_t});
  CHECK_THAT(table, Catch::Contains("avg@4 0.083") && Catch::Contains("  easy ") &&
                        Catch::Contains("failed samples: no code found 4, timeout 2, wrong answer 5"));
  CHECK_THAT(table, Catch::Contains("3 problems x 4 samples  avg@4") && Catch::Contains("    1 problem         "));
  CHECK_THAT(table, !Catch::Contains("note:"));
  // gspo score with responses for some rows only: the note counts the rest (singular and plural).
  auto partial = eval::summarize("set.jsonl", {a}, true);
  partial.coverage = eval::CoverageSummary{4, 3};  // dataset_rows, problems_without_responses
  CHECK_THAT(eval::format_table({partial}),
             Catch::Contains("set.jsonl                    1 problem x 4 samples  avg@4") &&
                 Catch::Contains("  note: 3 of 4 problems in set.jsonl have no responses; scored 1 problem x 4 samples\n"));
  partial.coverage = eval::CoverageSummary{2, 1};
  CHECK_THAT(eval::format_table({partial}), Catch::Contains("note: 1 of 2 problems in set.jsonl has no responses"));
  CHECK_FALSE(nlohmann::ordered_json(eval::summarize("set", {a}, false)).contains("cons@4"));  // no majority vote outside math
}

TEST_CASE("external verifier: started once, answers per line, failures are clear", "[reward][external]") {
  const std::string script = "import sys, json\nfor line in sys.stdin:\n    r = json.loads(line)\n"
                             "    print(1.0 if r['answer'] in r['response'] else 0.25, flush=True)\n";
  const std::string path = std::string(GSPO_TEST_MODELS) + "/external_verifier.py";
  {
    std::ofstream f(path);
    f << script;
  }
  auto cfg = config::load_text("reward: {kind: external}\n", "t.yaml", {"reward.external_command=/usr/bin/python3 " + path});
  auto v = reward::make_verifier(cfg);
  data::Example ex{"t", "2+2=", "4", "{}", "", ""};
  for (int i = 0; i < 3; ++i) {
    CHECK(v->score("it is 4", ex).reward == 1.0);
    CHECK(v->score("it is 5", ex).reward == 0.25);
  }
  auto dead = config::load_text("reward: {kind: external, external_command: 'exit 3'}\n", "t.yaml");
  CHECK_THROWS_WITH(reward::make_verifier(dead)->score("x", ex), Catch::Contains("reward.external_command 'exit 3'"));
  auto junk = config::load_text("reward: {kind: external, external_command: 'while read l; do echo yes; done'}\n", "t.yaml");
  CHECK_THROWS_WITH(reward::make_verifier(junk)->score("x", ex), Catch::Contains("wrote 'yes', not one number per line"));
}

TEST_CASE("weighted components and their validation", "[reward]") {
  auto cfg = config::load_text("data: {task: jsonl, path: x.jsonl}\nreward: {components: ['math:1', 'format:0.25']}\n", "t.yaml");
  auto v = reward::make_verifier(cfg);
  data::Example ex{"t", "", "7", "", "", ""};
  CHECK(v->score("\\boxed{7}", ex).reward == Approx(1.25));
  CHECK(v->score("The answer is 7", ex).reward == Approx(1.0));
  CHECK(v->score("\\boxed{8}", ex).reward == Approx(0.25));
  CHECK_FALSE(v->score("\\boxed{8}", ex).correct);
  CHECK_THROWS_WITH(config::load_text("reward: {components: ['math']}\n", "t.yaml"), Catch::Contains("\"name:weight\""));
  CHECK_THROWS_WITH(config::load_text("reward: {components: ['maths:1']}\n", "t.yaml"), Catch::Contains("\"name:weight\""));
  CHECK_THROWS_WITH(config::load_text("reward: {kind: regex}\n", "t.yaml"), Catch::Contains("needs reward.regex"));
  CHECK_THROWS_WITH(config::load_text("reward: {kind: regex, regex: '(a'}\n", "t.yaml"), Catch::Contains("not a valid regular"));
  auto rx = config::load_text("reward: {kind: regex, regex: 'ANSWER: {answer}$'}\n", "t.yaml");
  data::Example dot{"t", "", "3.5", "", "", ""};
  CHECK(reward::make_verifier(rx)->score("ANSWER: 3.5", dot).correct);
  CHECK_FALSE(reward::make_verifier(rx)->score("ANSWER: 3x5", dot).correct);  // the answer is escaped
}
