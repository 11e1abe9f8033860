// distributed.expert_parallel > 1 at start-up (#37; docs/distributed.md, "Expert parallelism"): the model checked for
// what expert parallelism needs (ConfigErrors naming the key and the numbers), the groups opened, and this rank's
// experts kept, the others' freed.
#pragma once
#include <memory>

#include "gspo/config/options.h"
#include "gspo/parallel/expert_shards.h"

namespace gspo::model { class Policy; }

namespace gspo::train {

struct ExpertParallel {
  parallel::ExpertGroups groups;
  std::unique_ptr<parallel::ExpertShards> shards;  // a gate of the policy: destroy before it
};

// Collective over `world` when distributed.expert_parallel > 1; null when it is 1. Call once every rank holds the
// same whole weights (after the initial broadcast), before the update engine is made.
std::unique_ptr<ExpertParallel> setup_expert_parallel(const config::Config& cfg, model::Policy& policy,
                                                      parallel::Comm& world);

}  // namespace gspo::train
