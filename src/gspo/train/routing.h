// MoE routing across a step (GSPO paper, section 5.3): the experts each token went to in the old-log-prob pass, how
// many of them the step's updates changed (moe_routing_change_frac), and Routing Replay (algorithm.routing_replay:
// the update's forward uses the recorded experts, gating weights from the current router over them).
//
// Memory: 2 bytes x top_k x MoE layers per column of the step's micro-batches, padding included, on the model's
// device (Qwen3-30B-A3B: 48 layers x top-8 = 768 B per token; 1M tokens a rank = 0.77 GB).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gspo::train {

// The experts of one pass over a micro-batch, in the per-layer pass's right-aligned layout (train/logprobs.cpp).
struct RouteRecord {
  std::vector<at::Tensor> experts;  // per decoder layer: int16 [n, W, top_k] for MoE layers, undefined for dense
  at::Tensor response;              // bool [n, W]: the columns holding response tokens
  bool empty() const { return experts.empty(); }
  // Layer `index`'s experts as the model takes them (int64), or undefined for a dense layer / no record.
  at::Tensor replay(int64_t index) const;
};

// What a layered pass does with routing: run with recorded experts (`replay`), and/or record the experts it used.
struct RouteIO {
  const RouteRecord* replay = nullptr;
  RouteRecord* record = nullptr;
};

// Rollout Routing Replay (algorithm.routing_replay rollout): the rollout's experts of some rows, `routes` [n, P + r,
// L, k] in the rollout layout (RolloutBatch::routes: uint8 or int16; L = moe_layers.size()), as the per-layer pass
// over ids/mask [n, P + r] replays them: right-aligned as it aligns the rows (`width`: the most real tokens of a row,
// 0 = read from the mask), each MoE layer's [n, W, k] int16. Its `response` marks the response tokens the rollout ran
// (every one but each row's last, which it never ran): what the routing comparison counts.
RouteRecord rollout_record(const at::Tensor& routes, const at::Tensor& mask, int64_t P, int64_t width,
                           const std::vector<int64_t>& moe_layers, int64_t num_layers);

// Refuses a batch's rollout routes (RolloutBatch::routes, [N, P + R, L, k] on the host) that another model recorded:
// other MoE layers, top-k, or ids past `experts` (what a partial rollout resumed or a shipped row could bring), or
// none at all. Error naming both shapes and `model`.
void check_rollout_routes(const at::Tensor& routes, int64_t rows, int64_t moe_layers, int64_t top_k, int64_t experts,
                          const std::string& model);

// (token, MoE layer) pairs whose top-k expert set differs between two records of the same rows, over response tokens.
struct RoutingChange {
  explicit RoutingChange(size_t moe_layers) : changed(moe_layers, 0.0), tokens(moe_layers, 0.0) {}
  std::vector<double> changed, tokens;  // per MoE layer, in the model's moe_layers() order
  // Adds `after` against `before` (same micro-batch, same layout). Sets are compared unordered.
  void add(const RouteRecord& before, const RouteRecord& after, const std::vector<int64_t>& moe_layers);
  double changed_total() const;
  double tokens_total() const;
};

}  // namespace gspo::train
