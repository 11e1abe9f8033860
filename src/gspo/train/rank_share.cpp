#include "gspo/train/rank_share.h"

#include <string>

#include "gspo/config/validate.h"
#include "gspo/core/error.h"

namespace gspo::train {

bool prompts_divide(const config::Config& cfg, int64_t world_size) {
  return cfg.rollout.prompts_per_step % world_size == 0;
}

int64_t prompts_per_rank(const config::Config& cfg, int64_t world_size) {
  return cfg.rollout.prompts_per_step / world_size;
}

void check_world_size(const config::Config& cfg, int64_t world_size) {
  const int64_t K = cfg.distributed.rollout_ranks;
  if (K > 0) {
    if (K >= world_size)
      throw ConfigError(config::set_at(cfg, "distributed.rollout_ranks") + "distributed.rollout_ranks (" + std::to_string(K) +
                        ") must leave at least one training rank in a world of " + std::to_string(world_size) +
                        " (launch more ranks, or lower it)");
    const int64_t B = cfg.rollout.prompts_per_step;
    const int64_t in_flight = cfg.async.prompts_in_flight;
    if (cfg.async.partial_rollout && in_flight > 0 && in_flight % K != 0)
      throw ConfigError(config::set_at(cfg, "async.prompts_in_flight") + "async.prompts_in_flight (" +
                        std::to_string(in_flight) + ") must be a multiple of the rollout ranks (" + std::to_string(K) +
                        ") so each keeps as many groups in flight");
    for (int64_t n : {world_size - K, K})
      if (B % n != 0)
        throw ConfigError(config::set_at(cfg, "rollout.prompts_per_step") + "rollout.prompts_per_step (" + std::to_string(B) +
                          ") must be a multiple of the " + (n == K ? "rollout" : "training") + " ranks (" +
                          std::to_string(n) + " of a world of " + std::to_string(world_size) + ", distributed." +
                          "rollout_ranks " + std::to_string(K) + ") so each samples or trains whole groups");
    return;
  }
  const int64_t in_flight = cfg.async.prompts_in_flight;
  if (cfg.async.partial_rollout && in_flight > 0 && in_flight % world_size != 0)
    throw ConfigError(config::set_at(cfg, "async.prompts_in_flight") + "async.prompts_in_flight (" +
                      std::to_string(in_flight) + ") must be a multiple of the world size " +
                      std::to_string(world_size) + " so each rank keeps as many groups in flight");
  const int64_t E = cfg.distributed.expert_parallel;
  if (E > 1 && world_size % E != 0)
    throw ConfigError(config::set_at(cfg, "distributed.expert_parallel") + "distributed.expert_parallel (" +
                      std::to_string(E) + ") must divide the world size " + std::to_string(world_size) +
                      " (groups of E consecutive ranks share the experts)");
  if (!prompts_divide(cfg, world_size))
    throw ConfigError(config::set_at(cfg, "rollout.prompts_per_step") + "rollout.prompts_per_step (" +
                      std::to_string(cfg.rollout.prompts_per_step) + ") must be a multiple of the world size " +
                      std::to_string(world_size) + " so each rank samples whole groups");
}

}  // namespace gspo::train
