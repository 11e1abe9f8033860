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
