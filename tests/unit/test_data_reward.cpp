#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/core/error.h"
#include "gspo/data/cursor.h"
#include "gspo/data/dataset.h"
#include "gspo/reward/base/verifier.h"
#include "gspo/reward/factory.h"
#include "gspo/reward/scorers/scorer_table.h"
#include "gspo/train/schedule.h"
#include "helpers.h"

using namespace gspo;

TEST_CASE("arithmetic task is deterministic and correct", "[data]") {
  auto a = data::make_arithmetic(50, 9, "+-*", 3), b = data::make_arithmetic(50, 9, "+-*", 3);
  REQUIRE(a.size() == 50);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].prompt == b[i].prompt);
    int x = 0, y = 0;
    char op = 0;
    REQUIRE(std::sscanf(a[i].prompt.c_str(), "%d%c%d=", &x, &op, &y) == 3);
    const int want = op == '+' ? x + y : op == '-' ? x - y : x * y;
    CHECK(a[i].answer == std::to_string(want));
  }
  CHECK(data::make_arithmetic(50, 9, "+", 4)[0].prompt != a[0].prompt);
}

TEST_CASE("the cursor restores to the same future and reshuffles each epoch", "[data]") {
  data::Cursor c(7, true, 9);
  auto first = c.next(5);
  const auto e = c.epoch(), p = c.position();
  auto rest = c.next(12);
  data::Cursor d(7, true, 9);
  d.restore(e, p);
  CHECK(d.next(12) == rest);
  data::Cursor seq(7, true, 9);
  auto ep0 = seq.next(7), ep1 = seq.next(7);
  CHECK(ep0 != ep1);
  std::sort(ep0.begin(), ep0.end());
  std::sort(ep1.begin(), ep1.end());
  CHECK(ep0 == ep1);  // each epoch is a permutation
  CHECK_THROWS_AS(d.restore(0, 99), DataError);
}

TEST_CASE("JSONL datasets: field names, numeric answers, errors with file and line", "[data]") {
  const std::string path = std::string(GSPO_TEST_MODELS) + "/data_test.jsonl";
  {
    std::ofstream f(path);
    f << "{\"problem\": \"What is 2+2?\", \"answer\": 4}\n{\"problem\": \"x\", \"answer\": \"017\"}\n";
  }
  auto rows = data::load_jsonl(path, "problem", "answer");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].answer == "4");
  CHECK(rows[1].answer == "017");
  CHECK(rows[1].id == path + ":2");
  {
    std::ofstream f(path);
    f << "{\"problem\": \"ok\", \"answer\": 1}\n{broken\n";
  }
  CHECK_THROWS_WITH(data::load_jsonl(path, "problem", "answer"), Catch::Contains(path + ":2: not valid JSON"));
  CHECK_THROWS_AS(data::load_jsonl(path + ".missing", "problem", "answer"), IoError);
  CHECK(data::apply_template("Q: {prompt}\nA: {prompt}", "1+1") == "Q: 1+1\nA: 1+1");
}

TEST_CASE("built-in verifiers", "[reward]") {
  data::Example ex{"t", "3+4=", "7", "", "", ""};
  reward::LeadingInteger li;
  CHECK(li.score("7", ex).correct);
  CHECK(li.score(" 7 apples", ex).correct);
  CHECK(li.score("07", ex).correct);
  CHECK_FALSE(li.score("71", ex).correct);
  CHECK_FALSE(li.score("x7", ex).correct);
  CHECK_FALSE(li.score("", ex).correct);
  data::Example neg{"t", "3-4=", "-1", "", "", ""};
  CHECK(li.score("-1=", neg).correct);
  CHECK_FALSE(li.score("1", neg).correct);
  CHECK(reward::leading_integer("+12ab") == "+12");
  reward::ExactMatch em;
  CHECK(em.score("  7\n", ex).reward == 1.0);
  CHECK(em.score("7.0", ex).reward == 0.0);
}

// #68: what a verifier is, read as members (never from its display name), and the model-backed scorers as the rows
// of one table (what make_verifier, scores_with_models and gspo plan read).
TEST_CASE("a verifier's kind is a member, and the model scorers are the rows of one table", "[reward]") {
  using config::RewardKind;
  config::Config c;
  c.reward.kind = RewardKind::kExact;
  CHECK(reward::make_verifier(c)->kind() == RewardKind::kExact);
  CHECK(reward::make_verifier(c)->parts().empty());
  c.reward.components = {"math:1", "format:0.5"};
  const auto sum = reward::make_verifier(c);
  CHECK_FALSE(sum->kind().has_value());
  REQUIRE(sum->parts().size() == 2);
  CHECK(sum->parts()[0].verifier->kind() == RewardKind::kMath);
  CHECK(sum->parts()[1].verifier->kind() == RewardKind::kFormat);
  CHECK(sum->component_weights() == std::vector<double>{1, 0.5});
  CHECK_FALSE(sum->batches());  // rules only: scored row by row
  CHECK(sum->scoring_totals().rows == 0);
  CHECK_FALSE(reward::scores_with_models(c));
  for (const auto& row : reward::model_scorers()) {
    CHECK(reward::model_scorer(row.kind) == &row);
    config::Config m;
    m.reward.kind = row.kind;
    CHECK(reward::scores_with_models(m));
    m.reward.kind = RewardKind::kMath;
    m.reward.components = {std::string(config::name_of(row.kind)) + ":1", "math:0"};
    CHECK(reward::scores_with_models(m));
  }
  CHECK(reward::model_scorers().size() == 2);
  CHECK(reward::model_scorer(RewardKind::kModel)->path_key == std::string("reward.model_path"));
  CHECK(reward::model_scorer(RewardKind::kJudge)->path_key == std::string("reward.judge_path"));
  CHECK(reward::model_scorer(RewardKind::kMath) == nullptr);
}

TEST_CASE("learning-rate schedule: warmup, constant, cosine", "[train]") {
  CHECK(train::learning_rate(0, 100, 1.0, 4, config::Schedule::kConstant, 0) == Approx(0.25));
  CHECK(train::learning_rate(3, 100, 1.0, 4, config::Schedule::kConstant, 0) == Approx(1.0));
  CHECK(train::learning_rate(50, 100, 1.0, 4, config::Schedule::kConstant, 0) == Approx(1.0));
  CHECK(train::learning_rate(4, 104, 1.0, 4, config::Schedule::kCosine, 0.1) == Approx(1.0));
  CHECK(train::learning_rate(54, 104, 1.0, 4, config::Schedule::kCosine, 0.1) == Approx(0.55));
  CHECK(train::learning_rate(104, 104, 1.0, 4, config::Schedule::kCosine, 0.1) == Approx(0.1));
}
