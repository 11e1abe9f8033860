// What an update engine's optimizer updates (train/engines/update_engine.h): the policy's parameters (float32), float32
// masters of its bf16 parameters, or low-rank adapters (float32) of a frozen base in either dtype; params() in the
// order of Policy::parameters() (adapters: LoraAdapters::parameters()).
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/train/engines/master_weights.h"

namespace gspo::model { class Policy; class LoraAdapters; }

namespace gspo::train {

class Weights {
 public:
  Weights(model::Policy& policy, config::Dtype dtype, model::LoraAdapters* lora);
  std::vector<at::Tensor> params() const;
  void zero_grad();
  void after_backward();  // bf16: the policy's gradients summed into the masters' in float32
  void publish();         // bf16: the masters rounded into the policy
  // The policy's parameters (training dtype) and their gradients, plus the masters and theirs; each tensor once.
  int64_t bytes() const;
  void with_float32_policy(const std::function<void()>& f);
  bool finite() const;  // this rank's weights only

 private:
  model::Policy& policy_;
  model::LoraAdapters* lora_;
  std::unique_ptr<MasterWeights> master_;
};

}  // namespace gspo::train
