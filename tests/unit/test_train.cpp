// The step loop end to end on tiny models: exact resume, ratio 1 on the first mini-batch, micro-batch
// accumulation, non-finite handling, checkpoint atomicity and retention, bad inputs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/interrupt.h"
#include "gspo/io/checkpoint.h"
#include "gspo/core/fs.h"
#include "gspo/cli/train_job.h"
#include "helpers.h"

using namespace gspo;
using test::fresh_dir;
using test::read_metrics;

namespace {

config::Config small_cfg(const std::string& out, std::vector<std::string> sets = {}, const std::string& model = "tiny_prior.pt") {
  sets.insert(sets.begin(), {"model.path=" + test::model_path(model), "train.output_dir=" + out});
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 8, group_size: 4, max_new_tokens: 2}
algorithm: {num_minibatches: 2, loss: gspo}
optimizer: {lr: 3.0e-3, warmup_steps: 1, weight_decay: 0.01}
train: {max_steps: 4}
checkpoint: {every: 2, keep_last: 5}
logging: {progress: false}
)", "test.yaml", sets);
}

std::vector<torch::Tensor> weights_of(const std::string& ckpt) {
  return model::Policy::load(io::policy_file(ckpt)).parameters();
}

}  // namespace

TEST_CASE("resuming at step k and running to n gives the same metrics and weights as one run to n", "[train][resume]") {
  const auto one = fresh_dir("resume_one"), two = fresh_dir("resume_two");
  cli::TrainJob(small_cfg(one), "").run();
  cli::TrainJob(small_cfg(two, {"train.max_steps=2"}), "").run();
  auto resumed = cli::TrainJob(small_cfg(two), "auto").run();
  CHECK(resumed.first_step == 2);
  CHECK(resumed.last_step == 4);
  auto a = read_metrics(one), b = read_metrics(two);
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 4);
  // Bitwise is the contract: both runs use the same config, batch shapes, thread count and code path in this one
  // process, and the checkpoint restores weights, optimizer, RNG and data state exactly.
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(a[i].dump() == b[i].dump());
  }
  double gsum = 0;
  for (const auto& m : a) gsum += m["grad_norm"].get<double>();
  CHECK(gsum > 0);  // the updates were real, so matching weights mean something
  auto wa = weights_of(one + "/checkpoints/step_00000004"), wb = weights_of(two + "/checkpoints/step_00000004");
  for (size_t i = 0; i < wa.size(); ++i) CHECK(torch::equal(wa[i], wb[i]));
  // A run directory is not reused by accident.
  CHECK_THROWS_WITH(cli::TrainJob(small_cfg(one), ""), Catch::Contains("already holds a run"));
}

TEST_CASE("first mini-batch ratios are exactly 1 with recomputed old log-probs, not with sampler log-probs", "[train]") {
  const auto dir = fresh_dir("ratio_one");
  cli::TrainJob(small_cfg(dir, {"train.max_steps=2"}), "").run();
  // Exactly: pi_old is recomputed on the same micro-batch tensors with the same weights and forward as the first
  // mini-batch's pi_theta; only grad mode differs, which changes no forward arithmetic here (CPU, no fuser), so
  // log s_i = 0 bitwise.
  for (const auto& m : read_metrics(dir)) CHECK(m["first_minibatch_ratio_dev"].get<double>() == 0.0);
  // Later mini-batches are off-policy: their ratios moved.
  CHECK(read_metrics(dir)[1]["seq_ratio_max"].get<double>() > 1.0);
}

// Both runs sample from the same initial weights with the same shapes before any update, so their samples are
// bitwise equal; the updates then sum over other micro-batch shapes. Gradients agree to float32 rounding (grad norm
// and loss 1e-5 relative). Weights are compared within 2% of one AdamW step (lr): Adam divides by sqrt(v), so
// coordinates with near-zero gradients magnify rounding differences.
TEST_CASE("micro-batches accumulate to the same update as whole mini-batches", "[train]") {
  const auto whole = fresh_dir("micro_whole"), micro = fresh_dir("micro_3");
  cli::TrainJob(small_cfg(whole, {"train.max_steps=1"}), "").run();
  cli::TrainJob(small_cfg(micro, {"train.max_steps=1", "algorithm.micro_batch_size=3"}), "").run();
  auto a = weights_of(whole + "/checkpoints/step_00000001"), b = weights_of(micro + "/checkpoints/step_00000001");
  auto init = model::Policy::load(test::model_path("tiny_prior.pt")).parameters();
  auto ma = read_metrics(whole)[0], mb = read_metrics(micro)[0];
  CHECK(mb["grad_norm"].get<double>() == Approx(ma["grad_norm"].get<double>()).epsilon(1e-5));
  CHECK(mb["grad_norm_max"].get<double>() == Approx(ma["grad_norm_max"].get<double>()).epsilon(1e-5));
  CHECK(mb["loss"].get<double>() == Approx(ma["loss"].get<double>()).epsilon(1e-5).margin(1e-9));
  double moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK((a[i] - b[i]).abs().max().item<double>() < 0.02 * 3e-3);
    moved = std::max(moved, (a[i] - init[i]).abs().max().item<double>());
  }
  CHECK(moved > 1e-4);
}

// A padded-token budget regroups each mini-batch's rows by length (algorithm.micro_batch_tokens). Each micro-batch's
// loss is still weighted by its rows over the mini-batch's and every loss is a per-sequence mean, so the update is
// the whole mini-batch's up to float32 rounding, with the tolerances above. The prior makes EOS and the digits
// likely, so responses run from 1 to 24 tokens; the regex rewards are dense, so the gradients are real. A budget of
// two or three rows per micro-batch must pad far less than whole mini-batches do.
TEST_CASE("a padded-token budget gives the update of whole mini-batches with less padding", "[train]") {
  const std::vector<std::string> sets{"train.max_steps=1", "rollout.max_new_tokens=24", "reward.kind=regex",
                                      "reward.regex=^[0-4]"};
  auto budget_sets = sets;
  budget_sets.push_back("algorithm.micro_batch_tokens=64");
  const auto whole = fresh_dir("tokens_whole"), budget = fresh_dir("tokens_64");
  cli::TrainJob(small_cfg(whole, sets), "").run();
  cli::TrainJob(small_cfg(budget, budget_sets), "").run();
  const auto ma = read_metrics(whole).at(0), mb = read_metrics(budget).at(0);
  CHECK(mb["reward_mean"] == ma["reward_mean"]);  // the same samples
  CHECK(mb["response_len_max"].get<double>() >= mb["response_len_min"].get<double>() + 10);
  for (const char* k : {"grad_norm", "grad_norm_max", "loss", "seq_ratio_mean", "entropy"}) {
    INFO(k);
    CHECK(mb[k].get<double>() == Approx(ma[k].get<double>()).epsilon(1e-5).margin(1e-9));
  }
  CHECK(mb["first_minibatch_ratio_dev"].get<double>() == 0.0);
  CHECK(ma["pad_frac"].get<double>() > 0.2);
  CHECK(mb["pad_frac"].get<double>() < 0.5 * ma["pad_frac"].get<double>());
  auto a = weights_of(whole + "/checkpoints/step_00000001"), b = weights_of(budget + "/checkpoints/step_00000001");
  auto init = model::Policy::load(test::model_path("tiny_prior.pt")).parameters();
  double moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK((a[i] - b[i]).abs().max().item<double>() < 0.02 * 3e-3);
    moved = std::max(moved, (a[i] - init[i]).abs().max().item<double>());
  }
  CHECK(moved > 1e-4);
}

// Memory per phase (core/resources.h): on CPU each is the process's resident peak within the phase, so it is
// positive and at most the whole-run peak_rss_mb (slack for the MiB rounding of separate reads).
TEST_CASE("metrics report the memory peak of each phase, within the whole-run peak", "[train]") {
  const auto dir = fresh_dir("phase_peaks");
  cli::TrainJob(small_cfg(dir, {"train.max_steps=2"}), "").run();
  std::ifstream in(dir + "/metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    const auto m = nlohmann::json::parse(line);
    const double whole = m["peak_rss_mb"].get<double>();
    CHECK(whole > 0);
    for (const char* k : {"peak_mb_rollout", "peak_mb_logprobs", "peak_mb_update"}) {
      INFO(k);
      REQUIRE(m.contains(k));
      CHECK(m[k].get<double>() > 0);
      CHECK(m[k].get<double>() <= whole + 1.0);
    }
    CHECK(m.contains("pad_frac"));
  }
  CHECK(lines == 2);
}

TEST_CASE("a non-finite loss stops with a message naming the step, or is skipped when configured", "[train][faults]") {
  const auto stop = fresh_dir("nan_stop");
  auto cfg = small_cfg(stop, {}, "nan_when_training.pt");
  cli::TrainJob t(cfg, "");
  CHECK_THROWS_WITH(t.run(), Catch::Contains("step 1, mini-batch 1: non-finite loss"));
  CHECK_FALSE(io::latest_checkpoint(stop).has_value());

  const auto skip = fresh_dir("nan_skip");
  auto s = cli::TrainJob(small_cfg(skip, {"train.on_nonfinite=skip", "train.max_steps=2"}, "nan_when_training.pt"), "").run();
  CHECK(s.skipped_updates == 4);
  auto ckpt = io::latest_checkpoint(skip);
  REQUIRE(ckpt.has_value());
  auto w = weights_of(*ckpt);
  auto init = model::Policy::load(test::model_path("nan_when_training.pt")).parameters();
  // Nothing applied (so bitwise the initial weights), nothing NaN.
  for (size_t i = 0; i < w.size(); ++i) CHECK(torch::equal(w[i], init[i]));
}

TEST_CASE("checkpoints are complete or invisible, pruned to keep_last, and loadable as policies", "[train][checkpoint]") {
  const auto dir = fresh_dir("ckpt");
  cli::TrainJob(small_cfg(dir, {"checkpoint.every=1", "checkpoint.keep_last=2"}), "").run();
  auto names = core::list_dir(dir + "/checkpoints");
  CHECK(names == std::vector<std::string>{"step_00000003", "step_00000004"});
  auto p = model::Policy::load(dir + "/checkpoints/step_00000004/policy.pt");
  CHECK(model::check_contract(p) < 1e-4);
  // A crash mid-write leaves a temporary or state-less directory: never picked up.
  core::ensure_dir(dir + "/checkpoints/.tmp-step_00000005-123");
  core::ensure_dir(dir + "/checkpoints/step_00000006");
  CHECK(*io::latest_checkpoint(dir) == dir + "/checkpoints/step_00000004");
  auto meta = io::read_meta(dir + "/checkpoints/step_00000004");
  CHECK(meta.step == 4);
  CHECK(meta.optimizer_steps == 8);
}

TEST_CASE("checkpoint.at_end false saves only the every-N checkpoints", "[train][checkpoint]") {
  const auto none = fresh_dir("ckpt_no_end");
  auto s = cli::TrainJob(small_cfg(none, {"checkpoint.every=0", "checkpoint.at_end=false"}), "").run();
  CHECK(s.last_step == 4);
  CHECK(s.last_checkpoint.empty());
  CHECK_FALSE(io::latest_checkpoint(none).has_value());
  CHECK(read_metrics(none).size() == 4);  // the run itself is whole
  const auto some = fresh_dir("ckpt_every3_no_end");
  cli::TrainJob(small_cfg(some, {"checkpoint.every=3", "checkpoint.at_end=false"}), "").run();
  CHECK(core::list_dir(some + "/checkpoints") == std::vector<std::string>{"step_00000003"});
}

TEST_CASE("an interrupt finishes the step, checkpoints it and stops", "[train][faults]") {
  const auto dir = fresh_dir("interrupt");
  cli::TrainJob t(small_cfg(dir), "");
  interrupt::request();
  auto s = t.run();
  interrupt::clear();
  CHECK(s.interrupted);
  CHECK(s.last_step == 1);
  CHECK(*io::latest_checkpoint(dir) == dir + "/checkpoints/step_00000001");
  CHECK(read_metrics(dir).size() == 1);
}

TEST_CASE("filters drop zero-variance groups and truncated responses from the update", "[train]") {
  const auto dir = fresh_dir("filters");
  cli::TrainJob(small_cfg(dir, {"train.max_steps=2", "algorithm.filter_zero_variance=true"}), "").run();
  for (const auto& m : read_metrics(dir)) {
    const double zv = m["zero_variance_frac"];
    CHECK(m["update_sequences"].get<int64_t>() == static_cast<int64_t>(std::llround((1 - zv) * 32)));
  }
  const auto dir2 = fresh_dir("filters_trunc");
  cli::TrainJob(small_cfg(dir2, {"train.max_steps=1", "algorithm.filter_truncated=true"}), "").run();
  auto m = read_metrics(dir2)[0];
  CHECK(m["update_sequences"].get<int64_t>() == std::llround((1 - m["truncated_frac"].get<double>()) * 32));
}

TEST_CASE("bad training inputs are clear errors", "[train][faults]") {
  CHECK_THROWS_AS(cli::TrainJob(small_cfg("/proc/gspo_cannot_write"), ""), IoError);
  const auto dir = fresh_dir("bad_data");
  core::ensure_dir(dir);
  {
    std::ofstream f(dir + "/d.jsonl");
    f << "{\"prompt\": \"1+1=\", \"answer\": \"2\"}\n\n{\"text\": \"2+2=\", \"answer\": \"4\"}\n";
  }
  CHECK_THROWS_WITH(cli::TrainJob(small_cfg(dir + "/run", {"data.task=jsonl", "data.path=" + dir + "/d.jsonl"}), ""),
                    Catch::Contains(dir + "/d.jsonl:3: no prompt field (tried prompt, problem, question, description; fields: answer, text)"));
  { std::ofstream f(dir + "/empty.jsonl"); }
  CHECK_THROWS_WITH(cli::TrainJob(small_cfg(dir + "/run2", {"data.task=jsonl", "data.path=" + dir + "/empty.jsonl"}), ""),
                    Catch::Contains("has no examples"));
  CHECK_THROWS_WITH(cli::TrainJob(small_cfg(dir + "/run3", {"model.path="}), ""), Catch::Contains("model.path is empty"));
  CHECK_THROWS_WITH(cli::TrainJob(small_cfg(dir + "/run4"), dir), Catch::Contains("is not a checkpoint directory"));
}

TEST_CASE("training an MoE policy reports expert-load imbalance per MoE layer", "[train][moe]") {
  const auto dir = fresh_dir("moe");
  cli::TrainJob(small_cfg(dir, {"train.max_steps=1"}, "qwen3_moe_tiny.pt"), "").run();
  auto m = read_metrics(dir)[0];
  REQUIRE(m.contains("moe_load_imbalance"));
  CHECK(m["moe_load_imbalance"].size() == 2);
  for (double v : m["moe_load_imbalance"]) CHECK((v >= 1.0 && v <= 4.0));
  const auto dense = fresh_dir("dense_no_moe_metric");
  cli::TrainJob(small_cfg(dense, {"train.max_steps=1"}), "").run();
  CHECK_FALSE(read_metrics(dense)[0].contains("moe_load_imbalance"));
}
