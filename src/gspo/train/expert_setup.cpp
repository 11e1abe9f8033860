#include "gspo/train/expert_setup.h"

#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"

namespace gspo::train {

std::unique_ptr<ExpertParallel> setup_expert_parallel(const config::Config& cfg, model::Policy& policy,
                                                      parallel::Comm& world) {
  const int64_t E = cfg.distributed.expert_parallel;
  if (E <= 1) return nullptr;
  const std::string head = config::set_at(cfg, "distributed.expert_parallel") + "distributed.expert_parallel " +
                           std::to_string(E) + ": '" + policy.path() + "' ";
  if (!policy.has_routing() || policy.moe_layers().empty())
    throw ConfigError(head + (policy.has_routing() ? "is dense (no MoE layer): there are no experts to share; set "
                      "distributed.expert_parallel 1" : "has no routing methods (route_api; docs/model-contract.md), so "
                      "gspo cannot tell its MoE layers: re-export it with scripts/export_hf.py"));
  if (!policy.has_expert_parallel())
    throw ConfigError(head + "has no expert-parallel methods (ep_api, attention_block, moe_routing; docs/model-"
                      "contract.md): re-export it with scripts/export_hf.py");
  for (int64_t layer : policy.moe_layers()) {
    const int64_t n = policy.parameter("layers." + std::to_string(layer) + ".mlp.gate.weight").size(0);
    if (n % E != 0)
      throw ConfigError(head + "layer " + std::to_string(layer) + " has " + std::to_string(n) + " experts, which " +
                        std::to_string(E) + " ranks cannot share evenly (E must divide every MoE layer's expert count)");
  }
  if (world.world_size() % E != 0)
    throw ConfigError(head + "does not divide the world size " + std::to_string(world.world_size()));
  auto ep = std::make_unique<ExpertParallel>();
  ep->groups = parallel::open_expert_groups(world, E);
  ep->shards = std::make_unique<parallel::ExpertShards>(policy, *ep->groups.group);
  int64_t kept = 0, freed = 0;
  for (const auto& p : ep->shards->local()) kept += p.numel();
  for (const auto& p : ep->shards->remote()) freed += ep->shards->full_numel(p);
  const int64_t layer = policy.moe_layers().front(), per = ep->shards->per_rank(layer);
  const int64_t first = ep->groups.group->rank() * per;
  log::info("expert parallelism: {} group(s) of {} ranks; rank {} keeps experts [{}, {}) of each of {} MoE layers ({} "
            "expert parameters, {} freed); their gradients are summed over {} replica(s)",
            world.world_size() / E, E, world.rank(), first, first + per, policy.moe_layers().size(), kept, freed,
            ep->groups.replicas->world_size());
  return ep;
}

}  // namespace gspo::train
