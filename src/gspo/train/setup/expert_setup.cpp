#include "gspo/train/setup/expert_setup.h"

#include <torch/torch.h>

#include <algorithm>
#include <exception>

#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"

namespace gspo::train {

std::unique_ptr<ExpertParallel> open_expert_parallel(const config::Config& cfg, parallel::Comm& world) {
  const int64_t E = cfg.distributed.expert_parallel;
  if (E <= 1) return nullptr;
  if (world.world_size() % E != 0)  // (check_world_size said so first)
    throw ConfigError(config::set_at(cfg, "distributed.expert_parallel") + "distributed.expert_parallel (" +
                      std::to_string(E) + ") must divide the world size " + std::to_string(world.world_size()));
  auto ep = std::make_unique<ExpertParallel>();
  ep->groups = parallel::open_expert_groups(world, E);
  return ep;
}

void keep_experts(const config::Config& cfg, model::Policy& policy, ExpertParallel& ep, int64_t world_rank) {
  const int64_t E = cfg.distributed.expert_parallel;
  const std::string head = config::set_at(cfg, "distributed.expert_parallel") + "distributed.expert_parallel " +
                           std::to_string(E) + ": '" + policy.path() + "' ";
  if (!policy.has_routing() || policy.moe_layers().empty())
    throw ConfigError(head + (policy.has_routing() ? "is dense (no MoE layer): there are no experts to share; set "
                      "distributed.expert_parallel 1" : "has no routing methods (route_api; docs/model-contract.md), so "
                      "gspo cannot tell its MoE layers: re-export it with scripts/export_hf.py"));
  if (!policy.has_expert_parallel())
    throw ConfigError(head + "has no expert-parallel methods (ep_api, attention_block, moe_routing; docs/model-"
                      "contract.md): re-export it with scripts/export_hf.py");
  if (!policy.has_expert_slots())
    throw ConfigError(head + "cannot sample with its experts shared: the rollout runs the slot methods one layer at a "
                      "time (ep_api 2 and slot_api 2; docs/model-contract.md): re-export it with scripts/export_hf.py");
  for (int64_t layer : policy.moe_layers()) {
    const int64_t n = policy.parameter("layers." + std::to_string(layer) + ".mlp.gate.weight").size(0);
    if (n % E != 0)
      throw ConfigError(head + "layer " + std::to_string(layer) + " has " + std::to_string(n) + " experts, which " +
                        std::to_string(E) + " ranks cannot share evenly (E must divide every MoE layer's expert count)");
  }
  ep.as_loaded = model::weights_fingerprint(policy);
  ep.shards = std::make_unique<parallel::ExpertShards>(policy, *ep.groups.group);
  core::release_free_host_memory();
  int64_t kept = 0, freed = 0;
  for (const auto& p : ep.shards->local()) kept += p.numel();
  for (const auto& p : ep.shards->remote()) freed += ep.shards->full_numel(p);
  const int64_t per = ep.shards->per_rank(policy.moe_layers().front()), first = ep.groups.group->rank() * per;
  log::info("expert parallelism: rank {} keeps experts [{}, {}) of each of {} MoE layers ({} expert parameters; {} "
            "freed), gradients summed over {} replica(s)", world_rank, first, first + per, policy.moe_layers().size(),
            kept, freed, ep.groups.replicas->world_size());
}

namespace {

double rss_now_mb() {
  core::reset_phase_peaks(c10::kCPU);  // the high-water mark restarts at the resident size now
  return static_cast<double>(core::phase_peak_bytes(c10::kCPU)) / 1048576.0;
}

// Rank 0 says what loading in turns held on its node (world ranks 0 .. turns - 1, torchrun's layout): the largest
// sum, over the turns, of the loading rank's peak, the resident memory the earlier ranks kept, and the later ranks'
// memory before their turn; against every rank loading at once (the sum of the peaks).
void report_turns(parallel::Comm& world, int64_t turns, double before, double peak, double after) {
  const auto all = world.all_gather(torch::tensor({before, peak, after}, torch::kDouble)).view({-1, 3});
  if (!world.is_main()) return;
  const auto a = all.accessor<double, 2>();
  const int64_t n = std::min<int64_t>(turns, all.size(0));
  double node = 0, at_once = 0;
  for (int64_t k = 0; k < n; ++k) {
    double held = a[k][1];
    for (int64_t j = 0; j < n; ++j)
      if (j != k) held += j < k ? a[j][2] : a[j][0];
    node = std::max(node, held);
    at_once += a[k][1];
  }
  log::info("loaded in turns by {} ranks of a node: host memory of the node at most {:.0f} MB (each rank's peak while "
            "loading {:.0f} MB, {:.0f} MB after keeping its experts); all at once it would be {:.0f} MB", n, node,
            a[0][1], a[0][2], at_once);
}

int exit_code_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return err.exit_code();
  } catch (...) {
    return 1;
  }
}

[[noreturn]] void throw_like(int code, const std::string& what) {
  switch (code) {
    case 2: throw ConfigError(what);
    case 3: throw DataError(what);
    case 4: throw ModelContractError(what);
    case 5: throw IoError(what);
    case 7: throw DistributedError(what);
    default: throw Error(what);
  }
}

}  // namespace

void load_in_turns(parallel::Comm& world, bool in_turns, const std::function<void()>& load) {
  const int64_t local = world.env().local_rank;
  const int64_t turns = in_turns ? static_cast<int64_t>(world.max(static_cast<double>(local))) + 1 : 1;
  std::exception_ptr failed;
  double before = 0, peak = 0, after = 0;
  for (int64_t turn = 0; turn < turns; ++turn) {
    if (!in_turns || turn == local) {
      before = rss_now_mb();
      try {
        load();
      } catch (...) {
        failed = std::current_exception();
      }
      peak = static_cast<double>(core::phase_peak_bytes(c10::kCPU)) / 1048576.0;
      after = rss_now_mb();
    }
    // every rank stops at the same turn, with the failure's exit status (the launcher may report any rank's)
    const int code = static_cast<int>(world.max(failed ? exit_code_of(failed) : 0));
    if (failed) std::rethrow_exception(failed);
    if (code > 0) throw_like(code, "rank " + std::to_string(world.rank()) + ": another rank failed while loading the "
                             "model (its error is above)");
  }
  if (in_turns) report_turns(world, turns, before, peak, after);
}

}  // namespace gspo::train
