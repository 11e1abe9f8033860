// The seam of expert parallelism's rollout (#37; docs/distributed.md, "Expert parallelism"): a policy whose ranks each
// hold only some experts samples with the slot methods run one layer at a time (ep_api 2), each MoE layer's
// feed-forward handed to an ExpertRunner, which runs it with the ranks that hold the experts
// (parallel/expert_rollout.h: the group's exchange per layer). Set on a policy with Policy::set_expert_runner for a
// sampling scope; the model layer knows only this interface.
//
// Every pass of a rank is a collective over its group, so the group's ranks must agree when a sampling phase ends:
// each calls finish() (finish_expert_passes) at the same point of its program, before any other collective, and a rank
// that is done early keeps taking part, with no rows, in the passes of the ranks still sampling until every rank of the
// group has called it. Ranks may run different numbers of passes, and of sampler calls, in a phase.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gspo::model {

class Policy;

class ExpertRunner {
 public:
  virtual ~ExpertRunner() = default;
  // A slot pass over `tokens` rows (every token of the pass, padding included) begins; its MoE layers follow in order.
  virtual void begin_pass(int64_t tokens) = 0;
  // MoE layer `index`'s feed-forward of this pass's n [tokens, H]: [tokens, H] in n's dtype. With `experts` (the
  // policy recording its routes, Policy::record_routes), also the experts each token ran through, [tokens, top_k]
  // int64 on n's device, in the router's order; a runner that cannot say throws std::logic_error.
  virtual at::Tensor feed_forward(int64_t index, const at::Tensor& n, at::Tensor* experts) = 0;
  // The end of a sampling phase (see above).
  virtual void finish() = 0;
};

// runner->finish() when `policy` has a runner set; nothing otherwise (every other layout: no collective).
void finish_expert_passes(Policy& policy);

}  // namespace gspo::model
