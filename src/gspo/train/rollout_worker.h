// A rollout rank of asynchronous training (distributed.rollout_ranks > 0, docs/async.md): it holds the policy in the
// rollout's dtype (no optimizer state, no gradients), and for every batch trainer 0 asks for it takes the weights
// sent with the request, samples and scores its share of the batch's prompts (the in-process source: the sampler,
// the verifiers, the tools), and sends each trainer the groups it trains on. It stops when trainer 0 says so.
#pragma once
#include <memory>

#include "gspo/config/options.h"
#include "gspo/train/trainer.h"

namespace gspo::train {

class RolloutWorker {
 public:
  // `where.comm`: the rollout ranks' group (its rank orders their prompt shares); `where.link`: the world group.
  RolloutWorker(const config::Config& cfg, const Placement& where);
  ~RolloutWorker();
  // Samples until trainer 0 stops it; the summary counts what it did (is_main false: rank 0 reports the job).
  TrainSummary run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gspo::train
