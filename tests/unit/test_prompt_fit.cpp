// Prompt lengths are checked at load (data/prompt_fit.h): over-long prompts are skipped with a count, or refused
// naming file:line, instead of stopping training or an eval mid-run (regression: exit 3 at the first batch that
// drew the long prompt, and again at the same prompt after resuming).
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/data/prompt_fit.h"
#include "gspo/eval/eval.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/cli/train_job.h"
#include "helpers.h"

using namespace gspo;

namespace {

// Four short sums and, on line 3, a prompt of 300 bytes (the byte tokenizer: 300 tokens) against tiny_prior.pt's
// max_seq_len of 256.
std::string write_rows() {
  const std::string path = test::model_path("overlong_rows.jsonl");
  std::ofstream out(path);
  out << R"({"prompt": "1+1=", "answer": "2"})" << "\n" << R"({"prompt": "2+1=", "answer": "3"})" << "\n";
  out << R"({"prompt": ")" << std::string(300, '9') << R"(", "answer": "1"})" << "\n";
  out << R"({"prompt": "1+0=", "answer": "1"})" << "\n" << R"({"prompt": "0+0=", "answer": "0"})" << "\n";
  return path;
}

config::Config cfg(const std::string& data, const std::string& out, std::vector<std::string> sets = {}) {
  sets.insert(sets.begin(), {"model.path=" + test::model_path("tiny_prior.pt"), "train.output_dir=" + out,
                             "data.path=" + data});
  return config::load_text(R"(
data: {task: jsonl, shuffle: false}
rollout: {prompts_per_step: 4, group_size: 2, max_new_tokens: 4}
reward: {kind: regex, regex: "^[0-9]"}
train: {max_steps: 3}
checkpoint: {every: 3}
logging: {progress: false}
)", "fit.yaml", sets);
}

}  // namespace

TEST_CASE("fit_prompts drops prompts that leave no room for max_new_tokens, or refuses them by file:line",
          "[data]") {
  const auto path = write_rows();
  auto policy = test::load_tiny("tiny_prior.pt");
  auto tok = tokenizer::from_spec(policy.tokenizer_json(), "tiny_prior.pt");
  const auto c = cfg(path, test::fresh_dir("fit_unit"));
  auto rows = data::load_jsonl(path, "prompt", "answer");
  REQUIRE(rows.size() == 5);
  auto fit = data::fit_prompts(rows, c.data, *tok, 256 - 4, false);
  CHECK(fit.kept.size() == 4);
  CHECK(fit.dropped == 1);
  CHECK(fit.first_dropped == path + ":3");
  CHECK(fit.first_dropped_tokens >= 300);
  CHECK(fit.kept[2].prompt == "1+0=");  // order kept
  CHECK_THROWS_WITH(data::fit_prompts(rows, c.data, *tok, 252, true),
                    Catch::Contains(path + ":3") && Catch::Contains("room for 252"));
  CHECK_THROWS_WITH(data::fit_prompts(rows, c.data, *tok, 2, false), Catch::Contains("no prompt fits"));
}

TEST_CASE("training skips an over-long prompt at load and runs to the end, and overlong_prompts error refuses it",
          "[train][data]") {
  const auto path = write_rows();
  const auto out = test::fresh_dir("fit_train");
  // With every prompt drawn in order, the old code reached line 3 in the first batch and stopped (exit 3).
  auto sum = cli::TrainJob(cfg(path, out), "").run();
  CHECK(sum.last_step == 3);
  CHECK(sum.dropped_prompts == 1);
  CHECK(train::summary_text(sum).find("skipped at load: 1") != std::string::npos);
  CHECK_THROWS_AS(cli::TrainJob(cfg(path, test::fresh_dir("fit_refuse"), {"data.overlong_prompts=error"}), ""),
                  DataError);
}

TEST_CASE("a max_new_tokens that fills the context alone is a ConfigError naming key, value, model and max_seq_len",
          "[data][config]") {
  // Regression: rollout.max_new_tokens 300 against max_seq_len 256 said "all 20 are longer than -44 tokens".
  const auto path = write_rows();
  const auto model = test::model_path("tiny_prior.pt");
  auto c = cfg(path, test::fresh_dir("fit_budget"), {"rollout.max_new_tokens=256"});
  CHECK(data::prompt_budget(c, "rollout.max_new_tokens", 255, 256, model) == 1);  // room for a 1-token prompt
  CHECK_THROWS_AS(data::prompt_budget(c, "rollout.max_new_tokens", 256, 256, model), ConfigError);
  CHECK_THROWS_WITH(cli::TrainJob(c, ""),
                    "--set rollout.max_new_tokens=256: rollout.max_new_tokens (256) must be smaller than the "
                    "max_seq_len of the model '" + model + "' (256): prompt and response share those 256 positions, "
                    "so no prompt would fit");
  // The eval's cap: eval.max_new_tokens where set (its file:line), else rollout.max_new_tokens.
  auto e = config::load_text("eval:\n  max_new_tokens: 300\n", "e.yaml", {});
  CHECK_THROWS_WITH(eval::eval_prompt_budget(e, 256, "m.pt"),
                    Catch::StartsWith("e.yaml:2: the eval's max_new_tokens (300, from eval.max_new_tokens) must be "
                                      "smaller than the max_seq_len of the model 'm.pt' (256)"));
  auto r = config::load_text("rollout:\n  max_new_tokens: 300\n", "r.yaml", {});
  CHECK_THROWS_WITH(eval::eval_prompt_budget(r, 256, "m.pt"),
                    Catch::StartsWith("r.yaml:2: the eval's max_new_tokens (300, from rollout.max_new_tokens)"));
  CHECK(eval::eval_prompt_budget(r, 1024, "m.pt") == 724);
}
