#include "gspo/train/rank_share.h"

#include <string>

#include "gspo/core/error.h"

namespace gspo::train {

bool prompts_divide(const config::Config& cfg, int64_t world_size) {
  return cfg.rollout.prompts_per_step % world_size == 0;
}

int64_t prompts_per_rank(const config::Config& cfg, int64_t world_size) {
  return cfg.rollout.prompts_per_step / world_size;
}

void check_world_size(const config::Config& cfg, int64_t world_size) {
  if (!prompts_divide(cfg, world_size))
    throw ConfigError((cfg.origin.count("rollout.prompts_per_step") ? cfg.origin.at("rollout.prompts_per_step") + ": "
                                                                     : std::string()) + "rollout.prompts_per_step (" +
                      std::to_string(cfg.rollout.prompts_per_step) + ") must be a multiple of the world size " +
                      std::to_string(world_size) + " so each rank samples whole groups");
}

}  // namespace gspo::train
