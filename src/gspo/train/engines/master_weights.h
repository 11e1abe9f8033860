// bfloat16 training with float32 master weights (model.dtype: bfloat16). The policy's parameters are bf16 and
// carry the forward and backward; the optimizer (torch AdamW or ZeRO-1) works on float32 copies. After each
// micro-batch the bf16 gradients are added into the masters' float32 gradients (accumulation in float32); after
// each optimizer step the masters are rounded into the bf16 parameters. Updates smaller than bf16's resolution
// therefore still accumulate instead of being lost.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

namespace gspo::model { class Policy; }

namespace gspo::train {

class MasterWeights {
 public:
  // Takes float32 copies of the policy's (float32) parameters, then casts the policy to `dtype`.
  MasterWeights(model::Policy& policy, c10::ScalarType dtype);

  const std::vector<at::Tensor>& params() const { return master_; }  // float32, what the optimizer updates
  // master.grad += model.grad (as float32) for every model parameter with a gradient; model gradients cleared.
  void accumulate_grads();
  // Rounds the masters into the model's parameters.
  void copy_to_model();
  // Runs `f` with the policy temporarily holding the float32 masters (to save an exact float32 checkpoint).
  template <class F>
  void with_float32_policy(F&& f) {
    to_float32();
    try {
      f();
    } catch (...) {
      back_to_low_precision();
      throw;
    }
    back_to_low_precision();
  }

 private:
  void to_float32();
  void back_to_low_precision();
  model::Policy& policy_;
  c10::ScalarType dtype_;
  std::vector<at::Tensor> model_, master_;
};

}  // namespace gspo::train
