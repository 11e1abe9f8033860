// The model reward (#55): a reward model exported from transformers scores in gspo as in transformers, and the
// verifier around it renders, tokenizes, batches and fails row by row as docs/verifiers.md says. Fixture:
// tests/hf_export/test_reward_export.py --fixture (ctest make_reward_fixture).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <fstream>

#include "gspo/config/options.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/validation.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/core/error.h"
#include "gspo/model/reward_model.h"
#include "gspo/reward/scorers/model_reward.h"
#include "gspo/reward/factory.h"
#include "gspo/tokenizer/tokenizer.h"
#include "helpers.h"

using namespace gspo;
using test::config_error_of;
using test::model_path;

namespace {

std::string reward_path(const std::string& name) { return model_path("reward/" + name); }

at::Tensor tensor_of(const nlohmann::json& rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows)
    for (const auto& v : r) flat.push_back(v.get<int64_t>());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

config::Config rm_config(const std::string& file) {
  config::Config c;
  c.reward.kind = config::RewardKind::kModel;
  c.reward.model.path = reward_path(file);
  c.reward.model.chat = config::ChatTemplate::kChatml;
  return c;
}

data::Example example(const std::string& prompt, const std::string& answer = "") {
  data::Example ex;
  ex.id = "t";
  ex.prompt = prompt;
  ex.answer = answer;
  return ex;
}

}  // namespace

TEST_CASE("a reward model scores padded batches as transformers does", "[reward_model]") {
  std::ifstream in(reward_path("reward_qwen3_cases.json"));
  REQUIRE(in);
  const auto cases = nlohmann::json::parse(in);
  auto rm = model::RewardModel::load(reward_path("reward_qwen3.pt"), c10::Device(c10::kCPU), c10::kFloat);
  CHECK(rm.manifest().reward_api == 1);
  CHECK(rm.manifest().architecture == "qwen3");
  CHECK(rm.num_parameters() > 0);
  REQUIRE(cases["cases"].size() == 3);  // right-, left- and mixed-padded
  for (const auto& c : cases["cases"]) {
    auto got = rm.score(tensor_of(c["ids"]), tensor_of(c["mask"]));
    const auto want = torch::tensor(c["scores"].get<std::vector<double>>(), torch::kFloat);
    REQUIRE(got.sizes() == want.sizes());
    const double scale = std::max(1.0, want.abs().max().item<double>());
    INFO(c["name"].get<std::string>());
    CHECK((got - want).abs().max().item<double>() <= 1e-4 * scale);  // transformers' float32 logits
  }
}

TEST_CASE("a policy or a missing file is refused as a reward model, naming it", "[reward_model]") {
  CHECK_THROWS_WITH(model::RewardModel::load(model_path("tiny.pt"), c10::Device(c10::kCPU), c10::kFloat),
                    Catch::Contains("tiny.pt") && Catch::Contains("not a reward model"));
  CHECK_THROWS_AS(model::RewardModel::load(reward_path("nope.pt"), c10::Device(c10::kCPU), c10::kFloat), IoError);
  CHECK(model::is_reward_model(reward_path("reward_qwen3.pt")));
  CHECK_FALSE(model::is_reward_model(model_path("tiny.pt")));
}

TEST_CASE("the model reward scores the rendered conversation, in passes under the token budget", "[reward_model]") {
  auto cfg = rm_config("reward_byte.pt");
  cfg.reward.scorer.batch_tokens = 256;  // several passes for the rows below
  reward::ModelReward v(cfg, c10::Device(c10::kCPU));
  auto rm = model::RewardModel::load(cfg.reward.model.path, c10::Device(c10::kCPU), c10::kFloat);
  auto tok = tokenizer::from_spec(rm.tokenizer_json(), "reward_byte.pt");
  const auto ex = example("What is 3+4?");
  const std::vector<std::string> responses{"7", "The answer is 7.", "8", std::string(60, 'x'), "seven"};
  std::vector<const data::Example*> exs(responses.size(), &ex);
  const auto scores = v.score_batch(responses, exs, nullptr, 1);
  REQUIRE(scores.size() == responses.size());
  for (size_t i = 0; i < responses.size(); ++i) {
    const std::string text = v.render(responses[i], ex);
    const std::string head = "<|im_start|>user\nWhat is 3+4?<|im_end|>\n<|im_start|>assistant\n";
    const std::string tail = responses[i] + "<|im_end|>\n";  // (Qwen3's template: an empty think block between)
    CHECK(text.rfind(head, 0) == 0);
    CHECK(text.size() >= head.size() + tail.size());
    CHECK(text.compare(text.size() - tail.size(), tail.size(), tail) == 0);
    const auto ids = tok->encode(text);
    const auto alone = rm.score(torch::tensor(ids, torch::kLong).view({1, -1}),
                                torch::ones({1, static_cast<int64_t>(ids.size())}, torch::kLong));
    INFO(responses[i]);
    CHECK(scores[i].reward == Approx(alone.item<double>()).margin(1e-5));  // batched and padded = the row alone
    CHECK(scores[i].failure.empty());
    CHECK_FALSE(scores[i].correct);  // a learned score does not grade correctness
  }
  CHECK(v.score(responses[1], ex).reward == Approx(scores[1].reward).margin(1e-5));
  const auto t = v.totals();
  CHECK(t.rows == static_cast<int64_t>(responses.size()) + 1);
  CHECK(t.failed == 0);
  CHECK(t.tokens >= 5 * 50);  // padding included
}

TEST_CASE("the model reward normalises and clips over the rows it scores at once", "[reward_model]") {
  auto raw_cfg = rm_config("reward_byte.pt");
  auto norm_cfg = raw_cfg;
  norm_cfg.reward.model.normalize = true;
  auto clip_cfg = norm_cfg;
  clip_cfg.reward.model.clip = 0.5;
  reward::ModelReward raw(raw_cfg, c10::Device(c10::kCPU)), norm(norm_cfg, c10::Device(c10::kCPU)),
      clipped(clip_cfg, c10::Device(c10::kCPU));
  const auto ex = example("2+2=");
  const std::vector<std::string> responses{"4", "5", "four", "22", "a long answer"};
  std::vector<const data::Example*> exs(responses.size(), &ex);
  const auto r = raw.score_batch(responses, exs, nullptr, 1), n = norm.score_batch(responses, exs, nullptr, 1),
             c = clipped.score_batch(responses, exs, nullptr, 1);
  double mean = 0, var = 0;
  for (const auto& s : r) mean += s.reward / r.size();
  for (const auto& s : r) var += (s.reward - mean) * (s.reward - mean) / r.size();
  REQUIRE(var > 0);
  for (size_t i = 0; i < r.size(); ++i) {
    CHECK(n[i].reward == Approx((r[i].reward - mean) / std::sqrt(var)).margin(1e-5));
    CHECK(c[i].reward == Approx(std::clamp(n[i].reward, -0.5, 0.5)).margin(1e-6));
  }
}

TEST_CASE("a row the reward model cannot score gets reward 0 and a named failure, the others their scores",
          "[reward_model]") {
  auto cfg = rm_config("reward_byte.pt");
  cfg.reward.scorer.max_tokens = 120;  // (the rendered turns alone take ~85 bytes)
  reward::ModelReward v(cfg, c10::Device(c10::kCPU));
  const auto ex = example("Say hi.");
  const std::vector<std::string> responses{"hi", std::string(200, 'h'), "hello"};
  std::vector<const data::Example*> exs(responses.size(), &ex);
  const auto s = v.score_batch(responses, exs, nullptr, 1);
  CHECK(s[0].failure.empty());
  CHECK(s[1].reward == 0.0);
  CHECK_THAT(s[1].failure, Catch::Contains("longer than the reward model's context") && Catch::Contains("> 120 tokens"));
  CHECK(s[2].failure.empty());
  CHECK(s[0].reward != 0.0);
  CHECK(v.totals().failed == 1);

  CHECK(v.totals().last_failure == s[1].failure);
}

// #65 item 3: a model reward that can score nothing trained on zeros, each row a failure no one saw. What can be checked
// before any step is refused then: a model whose score of a probe conversation is not finite, and data none of whose
// rows fits the model's token limit even with an empty response.
TEST_CASE("a reward model that can score nothing is refused at start-up, naming the file or the key", "[reward_model]") {
  CHECK_THROWS_AS(reward::ModelReward(rm_config("reward_nan.pt"), c10::Device(c10::kCPU)), ModelContractError);
  CHECK_THROWS_WITH(reward::ModelReward(rm_config("reward_nan.pt"), c10::Device(c10::kCPU)),
                    Catch::Contains("reward_nan.pt") && Catch::Contains("probe conversation as nan"));
  auto cfg = rm_config("reward_byte.pt");
  cfg.reward.scorer.max_tokens = 120;
  std::vector<data::Example> rows{example(std::string(150, 'q')), example(std::string(200, 'q'))};
  rows[1].id = "data.jsonl:2";
  CHECK_THROWS_WITH(reward::ModelReward(cfg, c10::Device(c10::kCPU), rows),
                    Catch::StartsWith("reward.model_max_tokens: no row of the data can be scored by the reward model") &&
                        Catch::Contains("the limit of 120"));
  CHECK_THROWS_AS(reward::ModelReward(cfg, c10::Device(c10::kCPU), rows), ConfigError);
  rows.push_back(example("Say hi."));  // one row that fits is enough: the others fail row by row, counted
  CHECK_NOTHROW(reward::ModelReward(cfg, c10::Device(c10::kCPU), rows));
}

TEST_CASE("a model reward in a weighted sum: accuracy follows the rule that grades, the score is a component",
          "[reward_model]") {
  auto cfg = rm_config("reward_byte.pt");
  cfg.reward.components = {"model:1", "leading_integer:0.5"};
  auto v = reward::make_verifier(cfg);
  REQUIRE(v->batches());
  reward::ModelReward alone(rm_config("reward_byte.pt"), c10::Device(c10::kCPU));
  const auto ex = example("3+4=", "7");
  const std::vector<std::string> responses{"7", "8"};
  std::vector<const data::Example*> exs(2, &ex);
  const auto s = reward::score_all(*v, responses, exs, 2);
  const auto m = alone.score_batch(responses, exs, nullptr, 1);
  CHECK(s[0].correct);
  CHECK_FALSE(s[1].correct);
  for (size_t i = 0; i < 2; ++i) {
    REQUIRE(s[i].components.size() == 2);
    CHECK(s[i].components[0] == Approx(m[i].reward).margin(1e-6));
    CHECK(s[i].reward == Approx(m[i].reward + 0.5 * s[i].components[1]).margin(1e-6));
  }
  CHECK(s[0].components[1] == 1.0);
  CHECK(s[1].components[1] == 0.0);
}

TEST_CASE("a config that asks for a model reward without a model is refused, naming the key", "[reward_model]") {
  CHECK_THAT(config_error_of("reward:\n  kind: model\n"), Catch::Contains("reward.model_path"));
}

// #68: validation during training grades with training's reward model, so a run holds one scorer on the training
// device. Before, every validation set made its own verifier without a device: one more copy of the reward model per
// set, on the CPU, whose figures never reached training's scorer.
TEST_CASE("validation grades every set with training's reward model: one scorer, no copy per set",
          "[reward_model][eval]") {
  auto cfg = rm_config("reward_byte.pt");
  const std::string set_path = std::string(GSPO_SOURCE_DIR) + "/data/math_sample.jsonl";
  cfg.data.task = config::Task::kJsonl;
  cfg.eval.datasets = {{set_path, "reward"}, {set_path, "reward"}};  // asked for: graded by the training reward
  cfg.eval.samples = 2;
  cfg.eval.max_problems = 3;
  cfg.eval.max_new_tokens = 4;
  auto policy = model::Policy::load(model_path("tiny.pt"), c10::kCPU);
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), policy.path());
  const auto rows = data::load_jsonl(set_path, "auto", "answer");
  const auto scorer = reward::make_verifier(cfg, rows, c10::Device(c10::kCPU));
  REQUIRE(reward::scores_with_models(cfg));
  parallel::LaunchEnv solo;
  parallel::Comm one(solo, config::DistributedOptions{}, c10::kCPU);
  eval::Validation validation(cfg, policy, *tok, policy.manifest().max_seq_len, one, *scorer);
  const int64_t before = scorer->scoring_totals().rows;
  const auto summaries = validation.run();
  REQUIRE(summaries.size() == 2);
  int64_t graded = 0;
  for (const nlohmann::ordered_json s : summaries)
    graded += s["problems"].get<int64_t>() * s["samples_per_problem"].get<int64_t>();
  CHECK(graded == 2 * 3 * 2);
  CHECK(scorer->scoring_totals().rows - before == graded);  // every validation row went through training's scorer
  // Left to its own verifier (auto: math on these rows), a set does not go through the reward model at all.
  auto own = cfg;
  own.eval.datasets = {{set_path, "auto"}};
  eval::Validation by_rows(own, policy, *tok, policy.manifest().max_seq_len, one, *scorer);
  const int64_t before_own = scorer->scoring_totals().rows;
  const auto own_summaries = by_rows.run();
  REQUIRE(own_summaries.size() == 1);
  CHECK(own_summaries[0].verifier == "math");
  CHECK(scorer->scoring_totals().rows == before_own);
  // A rule verifier stays per set (reward.kind auto picks by a set's rows): nothing is shared.
  auto rules = cfg;
  rules.reward.kind = config::RewardKind::kMath;
  CHECK_FALSE(reward::scores_with_models(rules));
}
