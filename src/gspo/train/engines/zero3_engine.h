// Private to src/gspo/train/engines (engine_choice.cpp makes them): the ZeRO-3 and expert-parallel update engines.
// What the engines share about each other's checkpoint files: optimizer_files.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "gspo/train/engines/update_engine.h"

namespace gspo::train {

// distributed.zero_stage 3 (parallel/zero3.h). Writes optimizer_zero3_rank<R>.pt per rank (exp_avg and exp_avg_sq
// shards); the weights resume from the checkpoint's consolidated float32 policy.pt.
std::unique_ptr<UpdateEngine> make_zero3_engine(model::Policy& policy, const EngineOptions& opts,
                                                parallel::Comm& comm);
// distributed.zero_stage 3 with low-rank adapters (opts.lora, already gating the policy; docs/lora.md): the frozen base
// sharded by parallel::Zero3 (frozen: b N / W bytes a rank, gathered per layer as it runs, ahead of the adapters in
// the policy's gate chain), the adapters replicated and stepped by `adapters` (the ZeRO-1 engine over them: their
// moments sharded). The whole hold (rollout, validation) gathers the base and merges the adapters into it in place, so
// a view of the policy without gates (Policy::ungated_view) samples the adapted model with no copy of its own.
std::unique_ptr<UpdateEngine> make_zero3_lora_engine(model::Policy& policy, const EngineOptions& opts,
                                                     parallel::Comm& comm, std::unique_ptr<UpdateEngine> adapters);
// distributed.expert_parallel > 1 (opts.experts, opts.expert_replicas; docs/distributed.md, "Expert parallelism"):
// ZeRO-1 twice, the non-expert weights' moments sharded over the world and the kept experts' over their replicas;
// gradients summed over the world and over the replicas respectively; one global norm (the experts' squared norm
// summed over the group). Checkpoints: ZeRO-1's file over the non-expert parameters (rank 0), one file of expert
// moments per rank of the first group (optimizer_experts_<g>.pt, written by that rank), and the consolidated float32
// policy.pt (rank 0 receives the experts it lacks from its group). They resume at any expert-parallel size and world
// size (each rank reads the files holding its experts); a ZeRO-1 checkpoint without expert files resumes too.
std::unique_ptr<UpdateEngine> make_expert_parallel_engine(model::Policy& policy, const EngineOptions& opts,
                                                          parallel::Comm& comm);

}  // namespace gspo::train
