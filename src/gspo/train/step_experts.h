// What a training step does with the experts of an MoE policy (#54; docs/distributed.md, "Expert parallelism"): how
// its per-layer passes run the decoder layers (a LayerRunner, LogprobPass::runner) and what it measures of the experts.
// The step, the update and the log-prob passes call these and hold no branch on expert parallelism: the choice is made
// once, by make_step_experts.
#pragma once
#include <memory>

#include "gspo/parallel/comm.h"
#include "gspo/train/layer_runner.h"
#include "gspo/train/metrics/metrics.h"

namespace gspo::train {

class UpdateEngine;

class StepExperts : public LayerRunner {
 public:
  // A step begins: the group's counters restart, the last training forward is forgotten.
  virtual void step_begins() = 0;
  // The step's rollout is over: ep_rollout_passes, ep_rollout_idle_frac (the engine's count of the rollout's passes).
  virtual void rollout_done(UpdateEngine& engine, StepMetrics& m) = 0;
  // moe_load_imbalance of the step's last training forward (metrics/moe_load.h). Collective over the expert group.
  virtual void record_load(model::Policy& policy, StepMetrics& m) = 0;
  // The step's collectives on the expert group (every MoE layer's exchange, training and rollout), added to `c`.
  virtual void add_comm(parallel::Comm::Counters& c) = 0;
};

// `group` null: the policy's own experts (every layer through own_layers(); moe_load_imbalance from the model's own
// shares, Policy::expert_load). `group` (distributed.expert_parallel > 1, must outlive the result): MoE layers run
// through parallel::expert_parallel_layer across it; the per-expert counts of the last forward with gradients (the
// update's last micro-batch) are kept on the device, [experts] a MoE layer, and summed over the group for
// moe_load_imbalance.
std::unique_ptr<StepExperts> make_step_experts(parallel::Comm* group);

}  // namespace gspo::train
