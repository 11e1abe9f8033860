// Tied embeddings (embedding = output layer, as in Qwen3-0.6B, Qwen2.5 0.5B-3B, Llama-3.2): the weight is one
// parameter everywhere parameters are enumerated. Regression for a weight listed twice by TorchScript's C++
// module.parameters(): float32 AdamW stepped it twice per update (2x the learning rate) and bf16 masters never
// moved it.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <set>

#include "gspo/config/load.h"
#include "gspo/io/checkpoint.h"
#include "gspo/cli/train_job.h"
#include "helpers.h"

using namespace gspo;

namespace {

constexpr double kLr = 1e-2;

config::Config tied_cfg(const std::string& out, std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"model.path=" + test::model_path("tiny_qwen3.pt"), "train.output_dir=" + out});
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 8, group_size: 4, max_new_tokens: 3, temperature: 1.0}
algorithm: {num_minibatches: 1}
optimizer: {lr: 1.0e-2, warmup_steps: 0, weight_decay: 0.0}
train: {max_steps: 1}
reward: {kind: regex, regex: "^[\\x00-\\x7f]"}
checkpoint: {every: 1, keep_last: 1}
logging: {progress: false}
)", "tied.yaml", sets);
}

// Largest |after - before| of the output layer's weight (the last parameter of the reference architecture when
// untied; here the same tensor as the embedding), read from the float32 checkpoint.
double tied_weight_step(const std::string& out) {
  auto before = test::load_tiny("tiny_qwen3.pt");
  auto after = model::Policy::load(io::policy_file(out + "/checkpoints/step_00000001"));
  auto b = before.parameters(), a = after.parameters();
  REQUIRE(a.size() == b.size());
  // The embedding is the parameter with vocab rows; with tying it appears once.
  int64_t found = 0;
  double step = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dim() == 2 && a[i].size(0) == before.manifest().vocab_size) {
      ++found;
      step = (a[i].to(torch::kFloat) - b[i].to(torch::kFloat)).abs().max().item<double>();
    }
  CHECK(found == 1);
  return step;
}

}  // namespace

TEST_CASE("a tied weight is one parameter: no duplicates, counted once", "[model][tied]") {
  auto tied = test::load_tiny("tiny_qwen3.pt");
  auto params = tied.parameters();
  std::set<const void*> storages;
  int64_t numel = 0;
  for (const auto& p : params) {
    storages.insert(p.data_ptr());
    numel += p.numel();
  }
  CHECK(storages.size() == params.size());
  CHECK(tied.num_parameters() == numel);
  // One embedding matrix of vocab x hidden, not two.
  int64_t vocab_matrices = 0;
  for (const auto& p : params) vocab_matrices += p.dim() == 2 && p.size(0) == tied.manifest().vocab_size;
  CHECK(vocab_matrices == 1);
}

// A random model emits ASCII and non-ASCII bytes about equally: the regex reward varies within groups.
TEST_CASE("a tied weight takes one AdamW step per update in float32, bf16 masters and bf16 with ZeRO-1",
          "[train][tied]") {
  // AdamW's first step moves every element with a non-zero gradient by lr * g / (|g| + eps) ~ lr (weight decay 0):
  // a weight stepped twice moves ~2 lr, a weight left out of the masters does not move.
  for (auto extra : std::vector<std::vector<std::string>>{
           {}, {"model.dtype=bfloat16"}, {"model.dtype=bfloat16", "distributed.zero_stage=1"}}) {
    const std::string name = extra.empty() ? "tied_f32" : extra.size() == 1 ? "tied_bf16" : "tied_bf16_zero";
    INFO(name);
    const auto out = test::fresh_dir(name);
    cli::TrainJob(tied_cfg(out, extra), "").run();
    const double step = tied_weight_step(out);
    CHECK(step > 0.5 * kLr);
    CHECK(step < 1.05 * kLr);
  }
}
