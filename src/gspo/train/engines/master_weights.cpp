#include "gspo/train/engines/master_weights.h"

#include <torch/torch.h>

#include "gspo/model/policy.h"

namespace gspo::train {

MasterWeights::MasterWeights(model::Policy& policy, c10::ScalarType dtype) : policy_(policy), dtype_(dtype) {
  torch::NoGradGuard g;
  model_ = policy.parameters();
  for (const auto& p : model_) master_.push_back(p.detach().to(torch::kFloat).clone().set_requires_grad(true));
  policy.set_param_dtype(dtype);
}

void MasterWeights::accumulate_grads() {
  torch::NoGradGuard g;
  for (size_t i = 0; i < model_.size(); ++i) {
    auto& p = model_[i];
    if (!p.grad().defined()) continue;
    auto& mg = master_[i].mutable_grad();
    if (mg.defined()) mg.add_(p.grad().to(torch::kFloat));
    else mg = p.grad().to(torch::kFloat);
    p.mutable_grad() = at::Tensor();
  }
}

void MasterWeights::copy_to_model() {
  torch::NoGradGuard g;
  for (size_t i = 0; i < model_.size(); ++i) model_[i].detach().copy_(master_[i]);
}

void MasterWeights::to_float32() {
  policy_.set_param_dtype(torch::kFloat);
  copy_to_model();
}

void MasterWeights::back_to_low_precision() {
  policy_.set_param_dtype(dtype_);
}

}  // namespace gspo::train
