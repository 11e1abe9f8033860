// Expert parallelism's exchange for one MoE layer (#37; docs/distributed.md, "Expert parallelism"). A group of E ranks
// holds a layer's n experts between them, rank g experts [g n / E, (g + 1) n / E). Each rank routes its own tokens
// (top-k of the router's float32 softmax); every (token, choice) pair goes to the rank that owns its expert
// (dispatch: one all-to-all of the counts, then one of the rows, sorted by expert), the owner runs its experts on
// what it received, and the results come back by the reverse all-to-all and are summed at the source with the
// router's weights (combine), over each token's choices in order. Dropless (no capacity factor: every pair is run)
// and deterministic (the same inputs give the same bits on every run). Both exchanges are autograd functions whose
// backward is the reverse exchange, so gradients reach the tokens, the router and the local experts, and an
// activation-checkpointed layer's recompute redoes them; a rank whose tokens go nowhere else, or that has none,
// still takes part (every rank of the group must call the same exchanges in the same order).
//
// Cost per MoE layer and rank (T tokens, top-k, hidden H, b bytes): the rows sent and received, k T H b each way in the
// forward (dispatch + combine) and again in the backward; memory: the k T rows sent and the rows received.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace gspo::parallel {

class Comm;

// One layer's routing of this rank's tokens, and the exchanges it implies.
class ExpertRoute {
 public:
  // `experts`: [T, k] int64 expert indices in [0, num_experts) (T may be 0); num_experts a multiple of the group's
  // size. Collective over `group` (the counts and expert ids are exchanged). std::invalid_argument for a bad shape,
  // an index out of range or experts that do not split evenly.
  ExpertRoute(const at::Tensor& experts, int64_t num_experts, Comm& group);

  int64_t local_experts() const { return per_rank_; }  // n / E
  int64_t first_expert() const { return first_; }       // this rank's first expert
  // The rows this rank's experts run: [received] local expert index of each (0 .. local_experts() - 1).
  const at::Tensor& local_expert() const { return local_expert_; }

  // Collective. x [T, H] -> [received, H]: each token's row once per choice, at the rank owning that expert.
  at::Tensor dispatch(const at::Tensor& x) const;
  // Collective. y [received, H] (the experts' outputs, dispatch's order) -> [T, H]: sum over each token's k choices
  // of weights[t, j] x its expert's output. `weights` [T, k] in y's dtype.
  at::Tensor combine(const at::Tensor& y, const at::Tensor& weights) const;

 private:
  Comm& group_;
  int64_t tokens_ = 0, k_ = 0, per_rank_ = 0, first_ = 0;
  at::Tensor order_, inverse_;  // the (token, choice) pairs sorted by expert (stable), and its inverse permutation
  std::vector<int64_t> send_, recv_;
  at::Tensor local_expert_;
};

// Qwen3-MoE's sparse MLP (transformers' Qwen3MoeSparseMoeBlock) under expert parallelism: router logits x W_r^T in
// float32, softmax, top-k (or the given `routes` [T, k]: Routing Replay, their weights from the current softmax),
// renormalised over the k when `norm_topk`, cast to x's dtype; each local expert e computes
// down_e(silu(gate_e(x)) * up_e(x)). router [n, H]; gate and up [n / E, I, H], down [n / E, H, I]: this rank's
// experts. Returns [T, H] and, in `chosen` when given, the experts used ([T, k]).
at::Tensor expert_parallel_moe(const at::Tensor& x, const at::Tensor& router, const at::Tensor& gate,
                               const at::Tensor& up, const at::Tensor& down, int64_t top_k, bool norm_topk, Comm& group,
                               const at::Tensor& routes = {}, at::Tensor* chosen = nullptr);

}  // namespace gspo::parallel
