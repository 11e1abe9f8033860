// What a resume reads is checked before it is trained on (#65 item 8): NaN or Inf in a checkpoint's optimizer state
// (float32 moments, 8-bit absmax) or its policy.pt, and a negative step count, are refused with an IoError naming the
// file and the tensor (the run used to start and stop at its first step, exit 6, blaming the learning rate); a missing
// optimizer file is named (it used to be taken for a checkpoint of the other state_bits or zero_stage), and so is a
// missing ZeRO-3 rank file after the last one present (it used to be a header mismatch).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdio>

#include "gspo/cli/train_job.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/train/engines/update_engine.h"
#include "helpers.h"

using namespace gspo;

namespace {

train::EngineOptions options(int64_t zero_stage, int64_t bits) {
  train::EngineOptions o;
  o.optimizer.lr = 1e-2;
  o.optimizer.state_bits = bits;
  o.zero_stage = zero_stage;
  return o;
}

// A fresh engine's state (after one step of a quadratic loss, but for ZeRO-3, whose layers take only the per-layer
// pass: its zero moments) saved into the new directory `name`.
std::string saved(const std::string& name, int64_t zero_stage, int64_t bits, parallel::Comm& comm) {
  auto policy = test::load_tiny();
  auto engine = train::make_update_engine(policy, options(zero_stage, bits), comm);
  if (zero_stage != 3) {
    engine->zero_grad();
    torch::manual_seed(7);
    at::Tensor loss = torch::zeros({}, torch::kFloat);
    for (auto& p : policy.parameters()) loss = loss + (p - torch::randn(p.sizes())).pow(2).sum();
    loss.backward();
    engine->after_backward();
    engine->reduce();
    engine->step(1e-3);
  }
  const std::string dir = test::fresh_dir(name);
  core::ensure_dir(dir);
  engine->gather_for_save(dir + "_staging");
  engine->save(dir);
  return dir;
}

// Loads checkpoint `dir` into a fresh engine of the same kind.
void resume(const std::string& dir, int64_t zero_stage, int64_t bits, parallel::Comm& comm) {
  auto policy = test::load_tiny();
  auto engine = train::make_update_engine(policy, options(zero_stage, bits), comm);
  engine->load(dir);
}

// Element 0 of tensor k of the tensor list in `file` set to `value`.
void poison(const std::string& file, size_t k, double value) {
  auto t = io::load_tensors(file, "test state");
  REQUIRE(k < t.size());
  t[k].view({-1})[0] = value;
  io::save_tensors(file, t, "test state");
}

config::Config run_cfg(const std::string& out, int64_t steps) {
  return config::load_text("data: {task: arithmetic, max_operand: 3, num_prompts: 12}\n"
                           "rollout: {prompts_per_step: 4, group_size: 4, max_new_tokens: 2}\n"
                           "checkpoint: {every: 2}\nlogging: {progress: false}\n",
                           "t.yaml", {"model.path=" + test::model_path("tiny_prior.pt"), "train.output_dir=" + out,
                                      "train.max_steps=" + std::to_string(steps)});
}

}  // namespace

TEST_CASE("a resume refuses NaN or Inf in the sharded optimizers' state, naming the file and the tensor",
          "[resume][nonfinite]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  // ZeRO-1, float32: [step, exp_avg, exp_avg_sq]
  auto z1 = saved("nonfinite_z1", 1, 32, comm);
  CHECK_NOTHROW(resume(z1, 1, 32, comm));
  poison(z1 + "/optimizer_zero1.pt", 2, NAN);
  CHECK_THROWS_AS(resume(z1, 1, 32, comm), IoError);
  CHECK_THROWS_WITH(resume(z1, 1, 32, comm), Catch::Contains("optimizer_zero1.pt': exp_avg_sq holds 1 non-finite value "
                                                             "(NaN or Inf)"));
  // ZeRO-1, 8 bits: [step, exp_avg codes, their absmax, exp_avg_sq codes, their absmax]; and a negative step count
  auto z8 = saved("nonfinite_z1_8bit", 1, 8, comm);
  CHECK_NOTHROW(resume(z8, 1, 8, comm));
  poison(z8 + "/optimizer_zero1.pt", 4, INFINITY);
  CHECK_THROWS_WITH(resume(z8, 1, 8, comm),
                    Catch::Contains("optimizer_zero1.pt': exp_avg_sq absmax holds 1 non-finite"));
  poison(z8 + "/optimizer_zero1.pt", 0, -3);
  CHECK_THROWS_WITH(resume(z8, 1, 8, comm), Catch::Contains("optimizer_zero1.pt': the step count is -3"));
  // ZeRO-3: [header, then each unit's moments]
  auto z3 = saved("nonfinite_z3", 3, 32, comm);
  CHECK_NOTHROW(resume(z3, 3, 32, comm));
  poison(z3 + "/optimizer_zero3_rank0.pt", 3, NAN);
  CHECK_THROWS_AS(resume(z3, 3, 32, comm), IoError);
  CHECK_THROWS_WITH(resume(z3, 3, 32, comm), Catch::Contains("optimizer_zero3_rank0.pt': unit 1's exp_avg holds 1"));
}

TEST_CASE("a resume refuses NaN in the replicated AdamW state, 8-bit and float32, naming the file and the tensor",
          "[resume][nonfinite]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  // 8 bits: five tensors a parameter [step, exp_avg, absmax, exp_avg_sq, absmax]; the first quantised parameter's
  auto a8 = saved("nonfinite_8bit", 0, 8, comm);
  CHECK_NOTHROW(resume(a8, 0, 8, comm));
  const std::string file8 = a8 + "/optimizer_8bit.pt";
  const auto st = io::load_tensors(file8, "test state");
  size_t q = 0;
  while (5 * q + 1 < st.size() && st[5 * q + 1].scalar_type() != torch::kUInt8) ++q;
  REQUIRE(5 * q + 1 < st.size());
  poison(file8, 5 * q + 2, NAN);
  CHECK_THROWS_WITH(resume(a8, 0, 8, comm), Catch::Contains("optimizer_8bit.pt': tensor " + std::to_string(q) +
                                                            "'s exp_avg absmax holds 1 non-finite value"));
  // float32: torch's own optimizer.pt
  auto a32 = saved("nonfinite_32bit", 0, 32, comm);
  CHECK_NOTHROW(resume(a32, 0, 32, comm));
  {
    auto policy = test::load_tiny();
    torch::optim::AdamW opt(policy.parameters(), torch::optim::AdamWOptions(1e-2));
    io::load_optimizer(a32, opt);
    const auto it = opt.state().find(opt.param_groups()[0].params()[1].unsafeGetTensorImpl());
    REQUIRE(it != opt.state().end());
    auto& state = static_cast<torch::optim::AdamWParamState&>(*it->second);
    state.exp_avg_sq().view({-1})[0] = INFINITY;
    io::save_optimizer(a32, opt);
  }
  CHECK_THROWS_AS(resume(a32, 0, 32, comm), IoError);
  CHECK_THROWS_WITH(resume(a32, 0, 32, comm), Catch::Contains("optimizer.pt': parameter 1's exp_avg_sq holds 1 "
                                                              "non-finite value"));
}

TEST_CASE("a resume names a missing optimizer file, never taking it for another engine's checkpoint",
          "[resume][nonfinite]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto a8 = saved("missing_8bit", 0, 8, comm);
  std::remove((a8 + "/optimizer_8bit.pt").c_str());
  CHECK_THROWS_AS(resume(a8, 0, 8, comm), IoError);  // (it said "holds AdamW moments of optimizer.state_bits 32")
  CHECK_THROWS_WITH(resume(a8, 0, 8, comm), Catch::Contains("lacks optimizer_8bit.pt"));
  auto a32 = saved("missing_32bit", 0, 32, comm);
  std::remove((a32 + "/optimizer.pt").c_str());
  CHECK_THROWS_WITH(resume(a32, 0, 32, comm), Catch::Contains("lacks optimizer.pt"));
  auto z1 = saved("missing_z1", 1, 32, comm);
  std::remove((z1 + "/optimizer_zero1.pt").c_str());
  CHECK_THROWS_AS(resume(z1, 1, 32, comm), IoError);  // (it said "was written with distributed.zero_stage 0")
  CHECK_THROWS_WITH(resume(z1, 1, 32, comm), Catch::Contains("lacks optimizer_zero1.pt"));
  auto z3 = saved("missing_z3", 3, 32, comm);
  // rank 1's file of a 2-rank checkpoint: rank 0's header says 2 ranks wrote it
  auto t = io::load_tensors(z3 + "/optimizer_zero3_rank0.pt", "test state");
  t[0][1] = 2;
  io::save_tensors(z3 + "/optimizer_zero3_rank0.pt", t, "test state");
  CHECK_THROWS_AS(resume(z3, 3, 32, comm), IoError);
  CHECK_THROWS_WITH(resume(z3, 3, 32, comm), Catch::Contains("lacks optimizer_zero3_rank1.pt"));
  std::remove((z3 + "/optimizer_zero3_rank0.pt").c_str());
  CHECK_THROWS_WITH(resume(z3, 3, 32, comm), Catch::Contains("lacks optimizer_zero3_rank0.pt"));
  // another engine's files still name the stage that wrote them
  auto other = saved("missing_other_engine", 0, 8, comm);
  CHECK_THROWS_AS(resume(other, 1, 32, comm), ConfigError);
  CHECK_THROWS_WITH(resume(other, 1, 32, comm), Catch::Contains("was written with distributed.zero_stage 0"));
}

TEST_CASE("a resume refuses a policy.pt holding NaN, naming the file and the parameter", "[resume][nonfinite][train]") {
  const auto out = test::fresh_dir("nonfinite_policy");
  cli::TrainJob(run_cfg(out, 2), "").run();
  const std::string file = out + "/checkpoints/step_00000002/policy.pt";
  {
    auto policy = model::Policy::load(file);
    torch::NoGradGuard g;
    policy.named_parameters().back().second.view({-1})[0] = NAN;
    policy.save(file);
  }
  const std::string name = model::Policy::load(file).named_parameters().back().first;
  CHECK_THROWS_AS(cli::TrainJob(run_cfg(out, 4), "auto").run(), IoError);
  CHECK_THROWS_WITH(cli::TrainJob(run_cfg(out, 4), "auto").run(),
                    Catch::Contains(file + "': parameter '" + name + "' holds 1 non-finite value"));
}
