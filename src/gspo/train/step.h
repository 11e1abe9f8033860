// One rollout step (../shared/docs/gspo-algorithm.md section 5, beside a development checkout; docs/algorithm.md,
// "One step"): sample B x G responses, score them, compute group advantages, then take one optimizer step per
// mini-batch. With several ranks each samples and scores its B / world_size prompts (whole groups, so advantages
// stay local); the mini-batch plan is drawn over the global rows, identically on every rank, and each rank trains on
// its own rows of each mini-batch with loss weights relative to the global mini-batch, so the summed gradient is the
// one-process gradient.
//
//   cursor -> prompts -> Sampler -> RolloutBatch -> verifier -> rewards -> group advantages -> filters -> rows
//   rows -> mini-batch plan -> old/ref log-probs -> per mini-batch: micro-batches fwd/bwd -> UpdateEngine
//   everything measured -> StepMetrics -> reduce_across_ranks
#pragma once
#include <ATen/core/Generator.h>

#include <cstdint>
#include <vector>

#include "gspo/algo/advantage.h"
#include "gspo/algo/loss.h"
#include "gspo/algo/mismatch.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/step_experts.h"
#include "gspo/train/sources/rollout_source.h"  // Scored, the source; with it the config, cursor, batch and metrics

namespace gspo::model { class LoraAdapters; }

namespace gspo::train {

class UpdateEngine;
class RolloutLog;
class TeacherTerm;
struct MiniBatch;
struct Micro;

// What a checkpoint restores besides the weights and the optimizer state.
struct Progress {
  int64_t step = 0;             // rollout steps completed
  int64_t optimizer_steps = 0;  // optimizer steps taken (drives the LR schedule)
  data::Cursor cursor;          // position in the prompts
  at::Generator shuffle_gen;    // mini-batch shuffling (sampling noise is keyed by rollout round, rollout_source.h)
};

// The parts a step works with, owned by the Trainer.
struct StepParts {
  const config::Config& cfg;
  model::Policy& policy;
  model::Policy* reference;  // only when algorithm.kl_coef > 0
  const reward::Verifier& verifier;  // its component weights (reward.components)
  RolloutSource& source;             // the scored rounds the step trains on
  parallel::Comm& comm;
  UpdateEngine& engine;
  // algorithm.kl_coef > 0 with adapters and no other reference (algorithm.reference_model, model.adapter): the
  // reference is the policy's own frozen base, run with these adapters off (reference then null).
  model::LoraAdapters* reference_base = nullptr;
  // distributed.expert_parallel > 1: the group sharing the experts (every pass of the step runs its MoE layers
  // across it: step_experts.h).
  parallel::Comm* experts = nullptr;
  // logging.rollouts_every > 0: where the due steps' rollouts are written (rollout_log.h).
  RolloutLog* rollouts = nullptr;
  // The training rows' data sources, sorted (data::number_sources): the names of the per-source metrics.
  std::vector<std::string> sources = {};
  // distill.teacher set: the teacher whose per-token log-probs replace the rows' advantages (teacher_term.h).
  TeacherTerm* teacher = nullptr;
  // -1 flips every advantage: only the test fault GSPO_FAULT=advantage_sign (setup/fault.h).
  double advantage_sign = 1;
};

// This rank's per-row metric columns (response_len, truncated, advantage), zero_variance's sum and sample_tokens.
// Lengths and sample_tokens count the policy's own tokens (RolloutBatch::loss_mask), not the tokens inserted into a
// response for it (a tool's output).
void record_rows(const rollout::RolloutBatch& b, const algo::Advantages& adv, StepMetrics& m);

class StepRunner {
 public:
  explicit StepRunner(StepParts parts);
  // Collective. Runs one rollout step, advancing `progress`; returns the step's metrics, reduced over the ranks.
  // Throws TrainingError on a non-finite loss or gradient when train.on_nonfinite is stop.
  StepMetrics run(Progress& progress);

 private:
  Scored sample_and_score(Progress& progress, StepMetrics& m);  // scored_rollout.cpp
  Scored keep_signal_groups(std::vector<Scored>& rounds);
  algo::Advantages advantages(const Scored& s);
  std::vector<int64_t> select_rows(const rollout::RolloutBatch& b, const algo::Advantages& adv);
  std::vector<MiniBatch> make_plan(const rollout::RolloutBatch& b, const at::Tensor& adv,
                                   const std::vector<int64_t>& rows, int64_t first_row, at::Generator& gen);
  void fill_old_logprobs(std::vector<MiniBatch>& plan, int64_t prompt_len, StepMetrics& m);
  void pad_to_lockstep(const rollout::RolloutBatch& b, const at::Tensor& adv, std::vector<MiniBatch>& plan);
  void update(std::vector<MiniBatch>& plan, int64_t prompt_len, Progress& progress, StepMetrics& m);
  void measure_routing(const std::vector<MiniBatch>& plan, int64_t prompt_len, StepMetrics& m);
  void write_rollouts(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row);
  void finish(StepMetrics& m, const Progress& progress);

  StepParts p_;
  std::unique_ptr<StepExperts> experts_;  // how the passes run MoE layers and what is measured of them
  algo::LossOptions loss_opts_;
  algo::AdvantageOptions adv_opts_;
  algo::IsOptions is_opts_;
  double temperature_;  // log-probs are taken at the sampling temperature (1 when greedy)
  LogprobPass train_pass_;  // the update's log-prob pass (train.chunked_head, train.activation_checkpointing)
  LogprobPass eval_pass_;   // the no-grad passes (old and reference log-probs)
  int64_t total_optimizer_steps_;
  bool replay_routes_ = false;   // algorithm.routing_replay old on an MoE policy
  bool rollout_routes_ = false;  // algorithm.routing_replay rollout on an MoE policy (R3)
  int64_t route_top_k_ = 0, route_experts_ = 0;  // R3: the policy's router, what a batch's routes must fit
  // What the update's and the reference's passes replay: the old pass's record (R2), the rollout's (R3), or none.
  const RouteRecord* replayed(const Micro& mi) const;
  // R3: each micro-batch's rollout record on the device, and moe_rollout_route_diff_frac (the trainer's own routing
  // at the step start against the rollout's, one more forward of the decoder layers) when routing_metrics is on.
  void rollout_routes(std::vector<MiniBatch>& plan, int64_t prompt_len, StepMetrics& m);
  bool measure_routes_ = false;  // algorithm.routing_metrics on an MoE policy
  bool share_prompts_ = false;   // train.shared_prefix on a model with the per-layer methods
  bool share_whole_ = false;     // ... whose groups run split, through Policy::shared_layer (SharePrompts::kWhole)
  int64_t split_tokens_ = 0;     // train.shared_prefix_split_tokens
};

}  // namespace gspo::train
