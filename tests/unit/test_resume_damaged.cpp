// --resume auto over a damaged newest checkpoint: it falls back to the newest intact one, says so, and keeps the
// damaged directory (moved aside as damaged-step_N when the resumed run writes that step again). Regression: the
// run used to stop with an I/O error, leaving only a manual fix.
#include <catch2/catch.hpp>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/checkpoint_check.h"
#include "gspo/core/fs.h"
#include "gspo/cli/train_job.h"
#include "helpers.h"

using namespace gspo;

namespace {
config::Config cfg(const std::string& out, int64_t steps) {
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 4, group_size: 4, max_new_tokens: 2}
train: {max_steps: 4}
checkpoint: {every: 2, keep_last: 5}
logging: {progress: false}
)", "t.yaml", {"model.path=" + test::model_path("tiny_prior.pt"), "train.output_dir=" + out,
                 "train.max_steps=" + std::to_string(steps)});
}
}  // namespace

TEST_CASE("checkpoint_damage reads every file back and names the damaged one", "[io][resume]") {
  const auto out = test::fresh_dir("damage_check");
  cli::TrainJob(cfg(out, 2), "").run();
  const std::string ckpt = out + "/checkpoints/step_00000002";
  CHECK(io::checkpoint_damage(ckpt).empty());
  // Truncated policy: the archive's directory is gone.
  const auto policy = core::read_text(ckpt + "/policy.pt");
  std::ofstream(ckpt + "/policy.pt", std::ios::binary | std::ios::trunc) << policy.substr(0, policy.size() / 2);
  CHECK_THAT(io::checkpoint_damage(ckpt), Catch::Contains("policy.pt"));
  std::ofstream(ckpt + "/policy.pt", std::ios::binary | std::ios::trunc) << policy;
  CHECK(io::checkpoint_damage(ckpt).empty());
  // Negative counters in state.json.
  const auto state = core::read_text(ckpt + "/state.json");
  core::atomic_write(ckpt + "/state.json", "{\"step\": -2, \"optimizer_steps\": 1, \"data_epoch\": 0, \"data_position\": 4}");
  CHECK_THAT(io::checkpoint_damage(ckpt), Catch::Contains("'step' must be a non-negative integer"));
}

TEST_CASE("checkpoint_damage reads a checkpoint of adapters back: adapter.pt and adapter.json", "[io][resume][lora]") {
  const auto out = test::fresh_dir("damage_check_lora");
  auto c = cfg(out, 2);
  c.model.lora_rank = 2;
  cli::TrainJob(c, "").run();
  const std::string ckpt = out + "/checkpoints/step_00000002";
  CHECK(io::checkpoint_damage(ckpt).empty());
  const auto meta = core::read_text(ckpt + "/adapter.json");
  core::atomic_write(ckpt + "/adapter.json", meta.substr(0, meta.size() / 2));  // torn
  CHECK_THAT(io::checkpoint_damage(ckpt), Catch::Contains("adapter.json"));
  core::atomic_write(ckpt + "/adapter.json", meta);
  const auto pt = core::read_text(ckpt + "/adapter.pt");
  std::ofstream(ckpt + "/adapter.pt", std::ios::binary | std::ios::trunc) << pt.substr(0, pt.size() / 2);
  CHECK_THAT(io::checkpoint_damage(ckpt), Catch::Contains("adapter.pt"));
}

TEST_CASE("resume auto passes over a damaged newest checkpoint to the newest intact one and keeps it",
          "[train][resume]") {
  const auto out = test::fresh_dir("damage_resume");
  cli::TrainJob(cfg(out, 4), "").run();
  const std::string newest = out + "/checkpoints/step_00000004";
  std::ofstream(newest + "/optimizer.pt", std::ios::binary | std::ios::trunc) << "not an archive";
  auto found = io::latest_intact_checkpoint(out);
  REQUIRE(found.dir);
  CHECK(*found.dir == out + "/checkpoints/step_00000002");
  REQUIRE(found.damaged.size() == 1);
  CHECK_THAT(found.damaged[0].second, Catch::Contains("optimizer.pt"));
  auto sum = cli::TrainJob(cfg(out, 6), "auto").run();
  CHECK(sum.first_step == 2);
  CHECK(sum.last_step == 6);
  // The damaged step-4 directory was moved aside when step 4 was written again, not deleted.
  CHECK(core::read_text(out + "/checkpoints/damaged-step_00000004/optimizer.pt") == "not an archive");
  CHECK(io::checkpoint_damage(out + "/checkpoints/step_00000004").empty());
}
