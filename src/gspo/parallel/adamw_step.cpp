#include "gspo/parallel/adamw_step.h"

#include <torch/torch.h>

#include <cmath>

namespace gspo::parallel {

void adamw_shard_step(at::Tensor& p, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
                      const at::Tensor& active, double lr, int64_t step, const AdamWHyper& h) {
  torch::NoGradGuard g;
  auto q = p.clone();
  // The element-wise sequence of torch::optim::AdamW::step (LibTorch 1.13 and 2.x).
  q.mul_(1 - lr * h.weight_decay);
  auto m = exp_avg.clone().mul_(h.beta1).add_(grad, 1 - h.beta1);
  auto v = exp_avg_sq.clone().mul_(h.beta2).addcmul_(grad, grad, 1 - h.beta2);
  const double bc1 = 1 - std::pow(h.beta1, static_cast<double>(step));
  const double bc2 = 1 - std::pow(h.beta2, static_cast<double>(step));
  auto denom = (v.sqrt() / std::sqrt(bc2)).add_(h.eps);
  q.addcdiv_(m, denom, -lr / bc1);
  if (!active.defined()) {  // every element
    p.copy_(q);
    exp_avg.copy_(m);
    exp_avg_sq.copy_(v);
    return;
  }
  p.copy_(torch::where(active, q, p));
  exp_avg.copy_(torch::where(active, m, exp_avg));
  exp_avg_sq.copy_(torch::where(active, v, exp_avg_sq));
}

}  // namespace gspo::parallel
