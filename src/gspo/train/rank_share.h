// How a step's prompts are shared among the data-parallel ranks: every rank samples and trains on whole groups, the
// same number of prompts on each, rank r's rows after rank r - 1's (global row order). gspo plan (plan/memory.cpp)
// calls the same rules.
#pragma once
#include <cstdint>

#include "gspo/config/options.h"

namespace gspo::train {

// Whether `world_size` ranks take equal whole shares of rollout.prompts_per_step.
bool prompts_divide(const config::Config& cfg, int64_t world_size);

// The prompts one rank samples a step: rollout.prompts_per_step / world_size (when prompts_divide()).
int64_t prompts_per_rank(const config::Config& cfg, int64_t world_size);

// ConfigError naming rollout.prompts_per_step unless prompts_divide() (or async.prompts_in_flight, partial rollouts,
// when the world size does not divide it). Checked before the ranks rendezvous
// (cli/train_job.cpp), so a wrong launch fails at once, and again by the Trainer.
void check_world_size(const config::Config& cfg, int64_t world_size);

}  // namespace gspo::train
