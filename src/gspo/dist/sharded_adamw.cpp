#include "gspo/dist/sharded_adamw.h"

#include <torch/torch.h>

#include <cmath>

#include "gspo/core/error.h"
#include "gspo/dist/comm.h"
#include "gspo/dist/grad_sync.h"

namespace gspo::dist {

ShardedAdamW::ShardedAdamW(std::vector<at::Tensor> params, AdamWHyper hyper, Comm& comm)
    : params_(std::move(params)), h_(hyper), comm_(comm) {
  for (const auto& p : params_) {
    if (p.scalar_type() != torch::kFloat)
      throw ConfigError("distributed.zero_stage 1 keeps float32 parameters; this model has a " +
                        std::string(c10::toString(p.scalar_type())) + " parameter");
    numel_ += p.numel();
  }
  const int64_t W = comm_.world_size();
  shard_ = (numel_ + W - 1) / W;
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
    active_ = torch::zeros({shard_ * comm_.world_size()}, torch::kBool);
    int64_t off = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (used[i]) active_.narrow(0, off, params_[i].numel()).fill_(true);
      off += params_[i].numel();
    }
    active_ = active_.narrow(0, comm_.rank() * shard_, shard_).to(grad_shard_.device());
  }
  comm_.reduce_scatter(flat([](const at::Tensor& p) { return p.grad().defined() ? p.grad() : torch::zeros_like(p); }),
                       grad_shard_);
  auto sq = grad_shard_.to(torch::kDouble).pow(2).sum().reshape({1});
  comm_.all_reduce(sq);
  return std::sqrt(sq.item<double>());
}

void ShardedAdamW::step(double lr, double grad_scale) {
  torch::NoGradGuard g;
  ++step_;
  auto full = flat([](const at::Tensor& p) { return p.detach(); });
  auto before = full.narrow(0, comm_.rank() * shard_, shard_);
  auto p = before.clone();
  auto grad = grad_scale == 1.0 ? grad_shard_ : grad_shard_ * grad_scale;
  // The element-wise sequence of torch::optim::AdamW::step (LibTorch 1.13 and 2.x).
  p.mul_(1 - lr * h_.weight_decay);
  auto m = exp_avg_.clone().mul_(h_.beta1).add_(grad, 1 - h_.beta1);
  auto v = exp_avg_sq_.clone().mul_(h_.beta2).addcmul_(grad, grad, 1 - h_.beta2);
  const double bc1 = 1 - std::pow(h_.beta1, static_cast<double>(step_));
  const double bc2 = 1 - std::pow(h_.beta2, static_cast<double>(step_));
  auto denom = (v.sqrt() / std::sqrt(bc2)).add_(h_.eps);
  p.addcdiv_(m, denom, -lr / bc1);
  // Parameters no rank has a gradient for keep their weights and moments.
  p = torch::where(active_, p, before);
  exp_avg_ = torch::where(active_, m, exp_avg_);
  exp_avg_sq_ = torch::where(active_, v, exp_avg_sq_);
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
  const int64_t lo = std::min(numel_, comm_.rank() * shard_);
  const int64_t n = std::min(numel_, lo + shard_) - lo;
  exp_avg_.zero_();
  exp_avg_sq_.zero_();
  exp_avg_.narrow(0, 0, n).copy_(full[1].narrow(0, lo, n));
  exp_avg_sq_.narrow(0, 0, n).copy_(full[2].narrow(0, lo, n));
}

}  // namespace gspo::dist
