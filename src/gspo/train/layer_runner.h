// How the training step's per-layer passes run a decoder layer (#54): the seam of expert parallelism in training, as
// model::ExpertRunner is in the rollout. LogprobPass::runner holds one (train/logprobs.h); null runs the policy's own
// layers. train/step_experts.h builds the step's: the policy's own, or expert parallelism's across a group.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gspo::model {
class Policy;
struct LayerContext;
}  // namespace gspo::model

namespace gspo::train {

class LayerRunner {
 public:
  virtual ~LayerRunner() = default;
  // Decoder layer `index` of the policy over x [B, T, H]: its output. `replay`: the experts each token must use
  // [B, T, top_k] (Routing Replay) or undefined. `chosen` (a recording pass, replay undefined): set to the experts each
  // token used, [B, T, top_k], or an empty tensor for a dense layer. `checkpoint`: keep only x for the backward.
  virtual at::Tensor run(model::Policy& policy, int64_t index, const at::Tensor& x, const model::LayerContext& ctx,
                         bool checkpoint, const at::Tensor& replay, at::Tensor* chosen) = 0;
  // Whether the runner needs the per-layer pass (a pass that would take the forward path throws instead).
  virtual bool needs_layers() const = 0;
  // Whether a pass may run `policy`'s decoder layers through Policy::shared_layer instead (shared prompts, #71): the
  // policy's own layers may when it has the method; expert parallelism's may not (its MoE layers exchange tokens).
  virtual bool runs_shared(const model::Policy& policy) const;
};

// The policy's own layers: Policy::layer, or Policy::routed_layer when `chosen` is asked for (without checkpointing:
// recording passes are no-grad ones). Stateless, shared.
LayerRunner& own_layers();

}  // namespace gspo::train
