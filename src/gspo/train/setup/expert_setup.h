// distributed.expert_parallel > 1 at start-up (#37; docs/distributed.md, "Expert parallelism"): the groups opened, the
// model loaded by a node's ranks in turns (each keeps its experts and frees the others' before the next one reads the
// file), the model checked for what expert parallelism needs (ConfigErrors naming the key and the numbers).
#pragma once
#include <array>
#include <functional>
#include <memory>

#include "gspo/config/options.h"
#include "gspo/parallel/expert_shards.h"

namespace gspo::model { class Policy; }

namespace gspo::train {

struct ExpertParallel {
  parallel::ExpertGroups groups;
  std::unique_ptr<parallel::ExpertShards> shards;  // a gate of the policy: destroy before it (keep_experts)
  std::array<double, 2> as_loaded{};                // the whole model's fingerprint, before the experts were freed
};

// Collective over `world` when distributed.expert_parallel > 1 (opens the groups); null when it is 1.
std::unique_ptr<ExpertParallel> open_expert_parallel(const config::Config& cfg, parallel::Comm& world);

// Checks the policy (dense, no expert-parallel methods, experts E does not divide: ConfigError), records its
// fingerprint, keeps this rank's experts and frees the others (host memory handed back to the kernel).
void keep_experts(const config::Config& cfg, model::Policy& policy, ExpertParallel& ep, int64_t world_rank);

// Collective over `world`. `load` on every rank; with `in_turns`, the ranks of a node one after another (local rank
// 0 first, every node at once), so that one whole model at a time is in a node's host memory beside the parts the
// earlier ranks kept. A failure on any rank fails every rank (the failing one with its own error).
void load_in_turns(parallel::Comm& world, bool in_turns, const std::function<void()>& load);

}  // namespace gspo::train
