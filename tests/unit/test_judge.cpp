// The judge reward (#55 item 3): a causal LM exported from transformers judges as transformers does (question ids,
// verdict probabilities within 1e-4, greedy judgements token for token), and the verifier around it fills its
// template, batches, parses judgements and fails row by row as docs/verifiers.md says. Fixture:
// tests/hf_export/test_judge_export.py --fixture (ctest make_judge_fixture).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "gspo/config/options.h"
#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/reward/factory.h"
#include "gspo/reward/scorers/judge.h"
#include "gspo/tokenizer/tokenizer.h"
#include "helpers.h"

using namespace gspo;
using test::config_error_of;
using test::model_path;

namespace {

nlohmann::json judge_cases() {
  std::ifstream in(model_path("judge/judge_qwen3_cases.json"));
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

config::Config judge_config(config::JudgeMode mode = config::JudgeMode::kVerdict) {
  config::Config c;
  c.reward.kind = config::RewardKind::kJudge;
  c.reward.judge.path = model_path("judge/judge_qwen3.pt");
  c.reward.judge.mode = mode;
  c.reward.judge.chat = config::ChatTemplate::kChatml;
  c.reward.judge.thinking = false;
  c.reward.scorer.dtype = config::ScoreDtype::kFloat32;
  return c;
}

data::Example example(const std::string& prompt, const std::string& answer) {
  data::Example ex;
  ex.id = "t";
  ex.prompt = prompt;
  ex.answer = answer;
  return ex;
}

struct Batch {
  std::vector<data::Example> examples;
  std::vector<std::string> responses;
  std::vector<const data::Example*> pointers() const {
    std::vector<const data::Example*> p;
    for (const auto& e : examples) p.push_back(&e);
    return p;
  }
};

Batch batch_of(const nlohmann::json& cases) {
  Batch b;
  for (const auto& c : cases["cases"]) {
    b.examples.push_back(example(c["prompt"], c["answer"]));
    b.responses.push_back(c["response"]);
  }
  return b;
}

}  // namespace

TEST_CASE("a judge's questions and verdicts equal transformers'", "[judge]") {
  const auto cases = judge_cases();
  auto cfg = judge_config();
  REQUIRE(cfg.reward.judge.question == cases["template"].get<std::string>());  // the fixture asked the default question
  reward::Judge judge(cfg, c10::Device(c10::kCPU));
  CHECK(judge.yes_id() == cases["yes_id"].get<int64_t>());
  CHECK(judge.no_id() == cases["no_id"].get<int64_t>());
  const auto b = batch_of(cases);
  for (size_t i = 0; i < b.responses.size(); ++i) {
    const auto& c = cases["cases"][i];
    INFO(c["name"].get<std::string>());
    CHECK(judge.render(b.responses[i], b.examples[i]) == c["text"].get<std::string>());
    CHECK(judge.question_ids(b.responses[i], b.examples[i]) == c["ids"].get<std::vector<int64_t>>());
  }
  // One pass and several (rows left-padded to the longest of their pass): the same verdicts, transformers' within 1e-4.
  for (int64_t budget : {int64_t{100000}, int64_t{300}}) {
    cfg.reward.scorer.batch_tokens = budget;
    reward::Judge j(cfg, c10::Device(c10::kCPU));
    const auto s = j.score_batch(b.responses, b.pointers(), nullptr, 1);
    for (size_t i = 0; i < s.size(); ++i) {
      const auto& c = cases["cases"][i];
      INFO(c["name"].get<std::string>() << " budget " << budget);
      CHECK(s[i].failure.empty());
      CHECK(s[i].reward == Approx(c["p_yes"].get<double>()).margin(1e-4));
      CHECK_FALSE(s[i].correct);  // a judge's opinion is not the reported accuracy
      CHECK_THAT(s[i].detail, Catch::StartsWith("judge: P(Yes) "));
    }
    CHECK(j.totals().rows == static_cast<int64_t>(s.size()));
    CHECK(j.totals().failed == 0);
  }
}

TEST_CASE("a response cannot speak for the judge with special-token strings", "[judge]") {
  const auto cases = judge_cases();
  reward::Judge judge(judge_config(), c10::Device(c10::kCPU));
  auto policy = model::Policy::load(model_path("judge/judge_qwen3.pt"));
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), "judge_qwen3.pt");
  const int64_t im_end = tok->special_tokens().at("<|im_end|>"), im_start = tok->special_tokens().at("<|im_start|>");
  for (const auto& c : cases["cases"]) {
    if (c["name"] != "injection") continue;
    const std::string response = c["response"];
    REQUIRE(response.find("<|im_end|>") != std::string::npos);
    const auto ids = judge.question_ids(response, example(c["prompt"], c["answer"]));
    // The template's own turns only: the user's (start, end) and the assistant's opened (start).
    CHECK(std::count(ids.begin(), ids.end(), im_end) == 1);
    CHECK(std::count(ids.begin(), ids.end(), im_start) == 2);
    CHECK(tok->encode(judge.render(response, example(c["prompt"], c["answer"]))) != ids);  // naive re-tokenizing differs
  }
}

TEST_CASE("a sampled judgement is the judge's greedy continuation, graded by its last \\boxed{}", "[judge]") {
  const auto cases = judge_cases();
  auto cfg = judge_config(config::JudgeMode::kSampled);
  cfg.reward.judge.max_new_tokens = cases["greedy_tokens"].get<int64_t>();
  cfg.reward.judge.temperature = 0;
  reward::Judge judge(cfg, c10::Device(c10::kCPU));
  auto policy = model::Policy::load(model_path("judge/judge_qwen3.pt"));
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), "judge_qwen3.pt");
  const auto b = batch_of(cases);
  const auto s = judge.score_batch(b.responses, b.pointers(), nullptr, 1);
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& c = cases["cases"][i];
    INFO(c["name"].get<std::string>());
    const std::string wrote = tok->decode(c["greedy_ids"].get<std::vector<int64_t>>());
    CHECK_THAT(s[i].detail, Catch::StartsWith("judge wrote: " + wrote));  // transformers' generate(do_sample=False)
    CHECK(s[i].reward == 0.0);  // a random judge writes no \boxed{}
    CHECK_THAT(s[i].failure, Catch::StartsWith("no \\boxed{} in the judgement"));
  }
  CHECK(judge.totals().failed == static_cast<int64_t>(s.size()));
}

TEST_CASE("a judgement's score is the number in its last \\boxed{} over judge_max_score", "[judge]") {
  using reward::parse_judgement;
  CHECK(parse_judgement("Good work. \\boxed{7}", 10).reward == Approx(0.7));
  CHECK(parse_judgement("Score: \\boxed{ 8.5 }", 10).reward == Approx(0.85));
  CHECK(parse_judgement("first \\boxed{3}, on reflection \\boxed{9}", 10).reward == Approx(0.9));
  CHECK(parse_judgement("\\boxed{1e1}", 10).reward == Approx(1.0));
  CHECK(parse_judgement("\\boxed{0}", 10).failure.empty());
  CHECK(parse_judgement("\\boxed{4}", 5).reward == Approx(0.8));
  CHECK(parse_judgement("no verdict here", 10).failure == "no \\boxed{} in the judgement");
  CHECK_THAT(parse_judgement("\\boxed{seven}", 10).failure, Catch::StartsWith("the judgement's \\boxed{} holds no number"));
  CHECK_THAT(parse_judgement("\\boxed{nan}", 10).failure, Catch::StartsWith("the judgement's \\boxed{} holds no number"));
  CHECK_THAT(parse_judgement("\\boxed{inf}", 10).failure, Catch::StartsWith("the judgement's \\boxed{} holds no number"));
  CHECK_THAT(parse_judgement("\\boxed{7 of 10}", 10).failure, Catch::StartsWith("the judgement's \\boxed{} holds no"));
  CHECK(parse_judgement("\\boxed{12}", 10).failure == "score 12 outside [0, 10]");
  CHECK(parse_judgement("\\boxed{-1}", 10).failure == "score -1 outside [0, 10]");
  CHECK(parse_judgement("\\boxed{12}", 10).reward == 0.0);
}

TEST_CASE("a row the judge cannot be asked about gets reward 0 and a named failure, the others their verdicts",
          "[judge]") {
  auto cfg = judge_config();
  cfg.reward.scorer.max_tokens = 140;
  reward::Judge judge(cfg, c10::Device(c10::kCPU));
  const std::vector<data::Example> ex{example("What is 2+3?", "5"), example("Say hi.", ""), example("What is 2+3?", "5")};
  const std::vector<std::string> responses{"5", "hi", std::string(400, '7')};
  const auto s = judge.score_batch(responses, {&ex[0], &ex[1], &ex[2]}, nullptr, 1);
  CHECK(s[0].failure.empty());
  CHECK(s[0].reward > 0.0);
  CHECK(s[1].reward == 0.0);
  CHECK_THAT(s[1].failure, Catch::Contains("asks for {answer}") && Catch::Contains("the row has none"));
  CHECK(s[2].reward == 0.0);
  CHECK_THAT(s[2].failure, Catch::StartsWith("longer than the judge's context") && Catch::Contains("> 140 tokens"));
  CHECK(judge.totals().failed == 2);
  // Without {answer} in the question, a row without one is judged.
  cfg.reward.judge.question = "Is this a greeting? {response}\nAnswer Yes or No.";
  reward::Judge open(cfg, c10::Device(c10::kCPU));
  CHECK(open.score("hi", ex[1]).failure.empty());
}

TEST_CASE("a verdict that is not one token of the judge's tokenizer is refused at start-up, naming the key",
          "[judge]") {
  auto cfg = judge_config();
  cfg.reward.judge.yes = "Yes, certainly";
  CHECK_THROWS_WITH(reward::Judge(cfg, c10::Device(c10::kCPU)),
                    Catch::StartsWith("reward.judge_yes: the verdict 'Yes, certainly' is ") &&
                        Catch::Contains("a verdict must be one token"));
  cfg = judge_config(config::JudgeMode::kSampled);
  cfg.reward.judge.yes = "Yes, certainly";  // (not read when sampling)
  cfg.reward.judge.max_new_tokens = 100000;
  CHECK_THROWS_WITH(reward::Judge(cfg, c10::Device(c10::kCPU)), Catch::StartsWith("reward.judge_max_new_tokens: "));
}

TEST_CASE("a judge in a weighted sum: accuracy follows the rule that grades, the verdict is a component", "[judge]") {
  auto cfg = judge_config();
  cfg.reward.components = {"judge:1", "leading_integer:0.5"};
  auto v = reward::make_verifier(cfg);
  REQUIRE(v->batches());
  reward::Judge alone(judge_config(), c10::Device(c10::kCPU));
  const auto ex = example("3+4=", "7");
  const std::vector<std::string> responses{"7", "8"};
  std::vector<const data::Example*> exs(2, &ex);
  const auto s = reward::score_all(*v, responses, exs, 2);
  const auto j = alone.score_batch(responses, exs, nullptr, 1);
  // What the device models did (the step's reward_model_tokens): the judge's part of the sum, rules add nothing.
  CHECK(v->scoring_totals().rows == 2);
  CHECK(v->scoring_totals().tokens == alone.totals().tokens);
  CHECK(v->scoring_totals().tokens > 0);
  CHECK(reward::make_verifier(config::Config{})->scoring_totals().tokens == 0);
  CHECK(s[0].correct);
  CHECK_FALSE(s[1].correct);
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE(s[i].components.size() == 2);
    CHECK(s[i].components[0] == Approx(j[i].reward).margin(1e-6));
    CHECK(s[i].reward == Approx(j[i].reward + 0.5 * s[i].components[1]).margin(1e-6));
  }
}

TEST_CASE("a config that asks for a judge without one, or with a question that hides the response, is refused",
          "[judge]") {
  CHECK_THAT(config_error_of("reward:\n  kind: judge\n"), Catch::Contains("reward.judge_path"));
  CHECK_THAT(config_error_of("reward:\n  kind: judge\n  judge_path: j.pt\n  judge_template: \"Is {prompt} right?\"\n"),
             Catch::Contains("reward.judge_template") && Catch::Contains("{response}"));
  CHECK_THAT(config_error_of("reward:\n  components: [\"judge:1\"]\n  judge_path: j.pt\n  judge_no: \"Yes\"\n"),
             Catch::Contains("reward.judge_yes") && Catch::Contains("two different"));
  CHECK_THAT(config_error_of("reward:\n  kind: judge\n  judge_path: j.pt\n  judge_mode: maybe\n"),
             Catch::Contains("reward.judge_mode"));
}

TEST_CASE("a weighted sum's failure reason is its grading part's, else a model part's", "[judge]") {
  config::Config rules;
  rules.reward.components = {"leading_integer:1", "exact:0"};
  auto v = reward::make_verifier(rules);
  const auto ex = example("3+4=", "7");
  CHECK(v->score("abc", ex).failure == "no answer found");  // (was empty: gspo eval then said "wrong answer")
  CHECK(v->score("8", ex).failure == "wrong answer");
  CHECK(v->score("7", ex).failure.empty());
  auto cfg = judge_config();
  cfg.reward.components = {"judge:1"};
  cfg.reward.scorer.max_tokens = 140;
  auto j = reward::make_verifier(cfg);
  const auto s = reward::score_all(*j, {std::string(400, '7'), "7"}, {&ex, &ex}, 1);
  CHECK_THAT(s[0].failure, Catch::StartsWith("longer than the judge's context"));
  CHECK(s[1].failure.empty());
}

// #65 items 3 and 9: a judge that could judge no row (a template asking for {answer} of rows without one, questions
// longer than reward.model_max_tokens) is refused at start-up naming the key; a misspelt placeholder is refused by the
// config check instead of reaching the judge as literal text; a weight that is not finite is refused.
TEST_CASE("a judge that can judge no row, or a template with a misspelt placeholder, is refused before any step",
          "[judge]") {
  auto cfg = judge_config();
  const std::vector<data::Example> none{example("Say hi.", ""), example("Say bye.", "")};
  CHECK_THROWS_WITH(reward::Judge(cfg, c10::Device(c10::kCPU), none),
                    Catch::Contains("no row of the data can be scored by the judge") &&
                        Catch::Contains("asks for {answer}, and the row has none"));
  CHECK_THROWS_AS(reward::Judge(cfg, c10::Device(c10::kCPU), none), ConfigError);
  std::vector<data::Example> some = none;
  some.push_back(example("What is 2+3?", "5"));
  CHECK_NOTHROW(reward::Judge(cfg, c10::Device(c10::kCPU), some));
  cfg.reward.scorer.max_tokens = 60;
  CHECK_THROWS_WITH(reward::Judge(cfg, c10::Device(c10::kCPU), {example(std::string(300, 'x'), "5")}),
                    Catch::StartsWith("reward.model_max_tokens: no row of the data can be scored by the judge") &&
                        Catch::Contains("over the limit of 60"));
  auto refused = [](const std::string& tmpl) {
    return config_error_of("reward:\n  kind: judge\n  judge_path: j.pt\n  judge_template: \"" + tmpl + "\"\n");
  };
  CHECK_THAT(refused("Q: {prompt} A: {answr} R: {response}"),
             Catch::Contains("reward.judge_template") && Catch::Contains("'{answr}'") &&
                 Catch::Contains("did you mean {answer}?"));
  CHECK_THAT(refused("Q: {Prompt} R: {response}"), Catch::Contains("did you mean {prompt}?"));
  CHECK_THAT(refused("Q: {prompt} R: {respone}"), Catch::Contains("did you mean {response}?"));
  // other braces are text: an empty pair, a word far from every placeholder (\boxed{score})
  CHECK_THAT(refused("Q: {prompt} R: {response} Write {score} or {}"), !Catch::Contains("reward.judge_template"));
  CHECK_THAT(config_error_of("reward:\n  components: [\"judge:inf\"]\n  judge_path: j.pt\n"),
             Catch::Contains("reward.components") && Catch::Contains("finite number"));
  CHECK_THAT(config_error_of("reward:\n  components: [\"model:nan\"]\n  model_path: m.pt\n"),
             Catch::Contains("finite number"));
}
