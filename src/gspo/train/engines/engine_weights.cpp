#include "gspo/train/engines/engine_weights.h"

#include <torch/torch.h>

#include "gspo/model/lora.h"
#include "gspo/model/policy.h"

namespace gspo::train {

Weights::Weights(model::Policy& policy, config::Dtype dtype, model::LoraAdapters* lora) : policy_(policy), lora_(lora) {
  if (lora) {  // the adapters froze the base (requires_grad false): it is cast, never updated, has no masters
    if (dtype == config::Dtype::kBFloat16) policy.set_param_dtype(torch::kBFloat16);
    return;
  }
  for (auto& p : policy.parameters()) p.set_requires_grad(true);
  if (dtype == config::Dtype::kBFloat16) master_ = std::make_unique<MasterWeights>(policy, torch::kBFloat16);
}

std::vector<at::Tensor> Weights::params() const {
  if (lora_) return lora_->parameters();
  return master_ ? master_->params() : policy_.parameters();
}

void Weights::zero_grad() {
  for (auto& p : params())
    if (p.grad().defined()) p.mutable_grad().zero_();
}

void Weights::after_backward() {
  if (master_) master_->accumulate_grads();
}

void Weights::publish() {
  if (master_) master_->copy_to_model();
}

int64_t Weights::bytes() const {
  int64_t n = 0;
  auto add = [&n](const std::vector<at::Tensor>& ts) {
    for (const auto& t : ts) {
      n += static_cast<int64_t>(t.nbytes());
      if (t.grad().defined()) n += static_cast<int64_t>(t.grad().nbytes());
    }
  };
  add(policy_.parameters());
  if (master_) add(master_->params());
  if (lora_) add(lora_->parameters());
  return n;
}

void Weights::with_float32_policy(const std::function<void()>& f) {
  if (master_) master_->with_float32_policy(f);
  else f();
}

bool Weights::finite() const {
  for (const auto& p : params())
    if (!torch::isfinite(p).all().item<bool>()) return false;
  return true;
}

}  // namespace gspo::train
