#include "gspo/parallel/sharded_adamw.h"

#include <torch/torch.h>

#include <cmath>

#include "gspo/core/error.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/grad_sync.h"
#include "gspo/parallel/shard_layout.h"

namespace gspo::parallel {

ShardedAdamW::ShardedAdamW(std::vector<at::Tensor> params, AdamWHyper hyper, Comm& comm)
    : params_(std::move(params)), h_(hyper), comm_(comm) {
  for (const auto& p : params_) {
    if (p.scalar_type() != torch::kFloat)
      throw ConfigError("distributed.zero_stage 1 keeps float32 parameters; this model has a " +
                        std::string(c10::toString(p.scalar_type())) + " parameter");
    numel_ += p.numel();
  }
  shard_ = shard_of(numel_, comm_.world_size());
  auto opts = params_.empty() ? torch::TensorOptions(torch::kFloat) : params_[0].options();
  grad_shard_ = torch::zeros({shard_}, opts);
  exp_avg_ = torch::zeros({shard_}, opts);
  exp_avg_sq_ = torch::zeros({shard_}, opts);
}

int64_t ShardedAdamW::state_bytes() const { return static_cast<int64_t>(exp_avg_.nbytes() + exp_avg_sq_.nbytes()); }
int64_t ShardedAdamW::grad_shard_bytes() const { return static_cast<int64_t>(grad_shard_.nbytes()); }

// One value per parameter element (`of(param)` gives the tensor for each), flattened in order and zero-padded to
// shard_ * world_size.
template <class F>
at::Tensor ShardedAdamW::flat(F&& of) const {
  std::vector<at::Tensor> parts;
  for (const auto& p : params_) parts.push_back(of(p).reshape(-1));
  const int64_t pad = shard_ * comm_.world_size() - numel_;
  if (pad > 0) parts.push_back(torch::zeros({pad}, parts.front().options()));
  return torch::cat(parts);
}

double ShardedAdamW::reduce_gradients() {
  torch::NoGradGuard g;
  const auto used = params_with_grad(comm_, params_);
  if (used != used_) {  // which parameters take part changes rarely (typically once, at the first step)
    used_ = used;
    std::vector<int64_t> numels;
    for (const auto& p : params_) numels.push_back(p.numel());
    active_ = active_mask(used, numels, comm_.world_size(), comm_.rank(), grad_shard_.device());
  }
  comm_.reduce_scatter(flat([](const at::Tensor& p) { return p.grad().defined() ? p.grad() : torch::zeros_like(p); }),
                       grad_shard_);
  auto sq = grad_shard_.to(torch::kDouble).pow(2).sum().reshape({1});
  comm_.all_reduce(sq);
  return std::sqrt(sq.item<double>());
}

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
  p.copy_(torch::where(active, q, p));
  exp_avg.copy_(torch::where(active, m, exp_avg));
  exp_avg_sq.copy_(torch::where(active, v, exp_avg_sq));
}

void ShardedAdamW::step(double lr, double grad_scale) {
  torch::NoGradGuard g;
  ++step_;
  auto p = flat([](const at::Tensor& t) { return t.detach(); }).narrow(0, comm_.rank() * shard_, shard_).clone();
  adamw_shard_step(p, exp_avg_, exp_avg_sq_, grad_scale == 1.0 ? grad_shard_ : grad_shard_ * grad_scale, active_, lr,
                   step_, h_);
  auto gathered = comm_.all_gather(p);
  int64_t off = 0;
  for (auto& param : params_) {
    param.detach().copy_(gathered.narrow(0, off, param.numel()).view_as(param));
    off += param.numel();
  }
}

std::vector<at::Tensor> ShardedAdamW::gather_state() {
  auto m = comm_.all_gather(exp_avg_).narrow(0, 0, numel_).to(torch::kCPU);
  auto v = comm_.all_gather(exp_avg_sq_).narrow(0, 0, numel_).to(torch::kCPU);
  return {torch::tensor({step_}, torch::kLong), m, v};
}

void ShardedAdamW::load_state(const std::vector<at::Tensor>& full, const std::string& from) {
  if (full.size() != 3 || full[1].numel() != numel_ || full[2].numel() != numel_)
    throw IoError("'" + from + "' does not hold ZeRO-1 optimizer state for this model (" + std::to_string(numel_) +
                  " parameters)");
  step_ = full[0].item<int64_t>();
  const auto [lo, hi] = range_of(numel_, comm_.world_size(), comm_.rank());
  const int64_t n = hi - lo;
  exp_avg_.zero_();
  exp_avg_sq_.zero_();
  exp_avg_.narrow(0, 0, n).copy_(full[1].narrow(0, lo, n));
  exp_avg_sq_.narrow(0, 0, n).copy_(full[2].narrow(0, lo, n));
}

}  // namespace gspo::parallel
