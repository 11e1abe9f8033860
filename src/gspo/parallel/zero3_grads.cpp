// ZeRO-3's gradient reduction (zero3.h): each unit's gradients reduce-scattered into this rank's float32 gradient
// shard (behind the next layer's backward with overlap), which parameters took part, and the global norm.
#include "gspo/parallel/zero3.h"

#include <torch/torch.h>

#include <cmath>

#include "gspo/parallel/comm.h"
#include "gspo/parallel/zero3_unit.h"

namespace gspo::parallel {

// The unit's .grad (float32, zeros for parameters without one) reduce-scattered into its gradient shard; with
// overlap, completed by the next settle_grads() (the next unit's reduce, or anything that reads the shards).
void Zero3::reduce_unit(Unit& u) {
  torch::NoGradGuard g;
  if (frozen_) {  // a frozen base has no gradient to keep (none is asked for: this only drops a stray one)
    for (auto& p : u.params) p.mutable_grad() = at::Tensor();
    return;
  }
  settle_grads();
  const int64_t W = comm_.world_size();
  auto flat = torch::zeros({u.shard * W}, u.grad.options());
  int64_t off = 0;
  for (size_t i = 0; i < u.params.size(); ++i) {
    auto& p = u.params[i];
    const int64_t n = c10::multiply_integers(u.shapes[i]);
    if (p.grad().defined()) {
      if (!idle_) {
        flat.narrow(0, off, n).copy_(p.grad().reshape(-1));
        u.local[i] = 1;
      }
      p.mutable_grad() = at::Tensor();
    }
    off += n;
  }
  auto mine = torch::empty({u.shard}, u.grad.options());
  rs_ = {comm_.reduce_scatter_async(std::move(flat), mine), &u, mine};
  if (!overlap_) settle_grads();
}

void Zero3::settle_grads() {
  if (!rs_.unit) return;
  Unit* u = rs_.unit;
  rs_.unit = nullptr;
  rs_.pending.wait();
  u->grad.add_(rs_.shard);
  rs_.shard = at::Tensor();
}

void Zero3::backward_done(int64_t layer) { reduce_unit(layer_unit(layer)); }

void Zero3::reduce_ends() { reduce_unit(units_[0]); }

void Zero3::zero_grad() {
  settle_grads();
  for (auto& u : units_) {
    u.grad.zero_();
    for (auto& p : u.params)
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

double Zero3::reduce_gradients() {
  torch::NoGradGuard g;
  settle_grads();
  // One small all-reduce: which parameters had a gradient on any rank since the last reduce.
  std::vector<double> flags;
  for (const auto& u : units_) flags.insert(flags.end(), u.local.begin(), u.local.end());
  auto t = torch::tensor(flags, torch::kDouble);
  comm_.all_reduce(t, ReduceOp::kMax);
  auto f = t.accessor<double, 1>();
  int64_t k = 0;
  std::vector<at::Tensor> sq;  // each unit's sum of squares, where its gradient lives: read once, summed below
  for (auto& u : units_) {
    bool changed = false;
    for (size_t i = 0; i < u.params.size(); ++i, ++k) {
      u.local[i] = 0;
      if (f[k] > 0 && !u.used[i]) u.used[i] = changed = true;
    }
    if (changed)
      u.active = active_mask(u.used, u.numels, comm_.world_size(), comm_.rank(), u.grad.device(),
                             shard_align(h_.state_bits));
    sq.push_back(u.grad.to(torch::kDouble).pow(2).sum());
  }
  // One copy for every unit (a read per unit would stall a GPU once per decoder layer), summed on the host in unit
  // order as before, then the all-reduce.
  const auto each = torch::stack(sq).to(torch::kCPU);
  double local = 0;
  for (int64_t i = 0; i < each.numel(); ++i) local += each.data_ptr<double>()[i];
  auto total = torch::tensor({local}, torch::kDouble);
  comm_.all_reduce(total);
  return std::sqrt(total.item<double>());
}

}  // namespace gspo::parallel
