// The copy of the weights that samples when it cannot be the policy itself: rollout.dtype bfloat16 beside a float32
// policy (the policy's weights, cast), or low-rank adapters (model.lora_rank: the base with the adapters merged,
// W + (alpha / r) B A, since the whole-model methods sampling runs cannot see the gated adapters). After each step
// that changed the trained weights it is stale, and takes them again before the next use (sampling, validation).
// With distributed.zero_stage 3 and adapters it is the policy's ungated view (Policy::ungated_view): the engine's whole
// hold merges the adapters into the gathered base in place, and there is nothing to copy.
#pragma once
#include "gspo/model/policy.h"

namespace gspo::model { class LoraAdapters; }

namespace gspo::train {

class SamplingCopy {
 public:
  // `policy`, `copy` and `lora` (null: the policy's weights are copied, cast) must outlive this; `copy` has the
  // policy's parameters (names and shapes) in any floating dtype.
  SamplingCopy(model::Policy& policy, model::Policy copy, const model::LoraAdapters* lora)
      : policy_(policy), copy_(std::move(copy)), lora_(lora) {}

  model::Policy& model() { return copy_; }
  void mark_stale() { stale_ = true; }
  // Takes the trained weights when stale (no autograd). Returns the seconds it took (0 when current).
  double refresh();

 private:
  model::Policy& policy_;
  model::Policy copy_;
  const model::LoraAdapters* lora_;
  bool stale_ = true;
};

}  // namespace gspo::train
