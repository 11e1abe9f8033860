// A decoder layer of an exported MoE model with its experts run under expert parallelism (#37): the model's own
// attention block (Policy::attention_block, ep_api), then expert_parallel_moe over `group` with this rank's experts,
// read from the policy's parameters by name (layers.<i>.mlp.gate.weight, layers.<i>.mlp.experts.<e>.{gate,up,
// down}_proj.weight), added to the residual; a dense layer runs as Policy::layer. Gradients reach the policy's own
// parameters: the attention's and the router's (this rank's tokens' share: summed over the ranks like any replicated
// weight) and this rank's experts' (every token routed to them, from every rank: no reduction inside the group).
// With `checkpoint` (and grad mode on) only x is kept: the backward runs the layer again, exchanges included (every
// rank's backward does, in the same order), and backpropagates through that graph, as Policy::layer's checkpointing.
// `chosen`: the experts each token used in the forward, [B, T, top_k] int64, or an empty tensor for a dense layer.
// Not yet: keeping the local experts stacked (each call stacks them: one copy of this rank's experts of the layer while
// it runs).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "gspo/model/policy.h"

namespace gspo::parallel {

class Comm;

// Collective over `group` for an MoE layer. x [B, T, H]; routes [B, T, top_k] (Routing Replay) or undefined.
// ModelContractError when the model lacks the expert-parallel methods; std::invalid_argument when its experts do not
// split over the group.
at::Tensor expert_parallel_layer(model::Policy& policy, int64_t index, const at::Tensor& x,
                                 const model::LayerContext& ctx, Comm& group, const at::Tensor& routes = {},
                                 bool checkpoint = false, at::Tensor* chosen = nullptr);

}  // namespace gspo::parallel
