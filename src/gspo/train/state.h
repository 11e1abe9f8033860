// Private: everything the loop carries between steps (trainer.cpp, step.cpp).
#pragma once
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <optional>

#include "gspo/algo/advantage.h"
#include "gspo/algo/loss.h"
#include "gspo/config/options.h"
#include "gspo/data/cursor.h"
#include "gspo/data/example.h"
#include "gspo/dist/comm.h"
#include "gspo/dist/sharded_adamw.h"
#include "gspo/io/metrics_log.h"
#include "gspo/model/policy.h"
#include "gspo/reward/verifier.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/master_weights.h"
#include "gspo/train/step_record.h"
#include "gspo/train/trainer.h"

namespace gspo::train {

struct Trainer::State {
  config::Config cfg;
  std::string run_dir;
  std::string config_yaml;                    // resolved config, stored with each checkpoint
  std::optional<model::Policy> policy;
  std::optional<model::Policy> reference;     // only when algorithm.kl_coef > 0
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<data::Example> examples;
  std::unique_ptr<data::Cursor> cursor;
  std::unique_ptr<reward::Verifier> verifier;
  std::unique_ptr<rollout::Sampler> sampler;
  std::unique_ptr<dist::Comm> comm;           // world size 1: a local no-op group
  std::unique_ptr<torch::optim::AdamW> optimizer;  // distributed.zero_stage 0
  std::unique_ptr<dist::ShardedAdamW> zero;        // distributed.zero_stage 1 (then `optimizer` is null)
  std::unique_ptr<MasterWeights> master;           // model.dtype bfloat16: float32 masters the optimizer updates
  at::Generator train_gen;                    // mini-batch shuffling (sampling noise is keyed by step, noise.h)
  algo::LossOptions loss_opts;
  algo::AdvantageOptions adv_opts;
  std::unique_ptr<io::MetricsLog> metrics;
  int64_t step = 0;                           // rollout steps completed
  int64_t optimizer_steps = 0;
  int64_t total_optimizer_steps = 0;
  int64_t skipped_updates = 0;
  int64_t dropped_prompts = 0;  // rows left out at load: prompt + max_new_tokens over max_seq_len (data/prompt_fit.h)
};

// One rollout step; returns its metrics (also appended to the metrics log by the caller).
nlohmann::ordered_json run_step(Trainer::State& s);

// What the optimizer updates: the float32 masters (model.dtype bfloat16) or the policy's own parameters.
std::vector<at::Tensor> train_params(Trainer::State& s);

// The metrics line of a step from this rank's record (collective: every rank calls it).
nlohmann::ordered_json step_metrics(Trainer::State& s, StepRecord& r, std::chrono::steady_clock::time_point t_step);

// The console line for one step.
std::string progress_line(const nlohmann::ordered_json& m, int64_t max_steps);

}  // namespace gspo::train
