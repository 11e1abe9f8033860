#include "gspo/parallel/grad_sync.h"

#include <torch/torch.h>

#include "gspo/parallel/comm.h"

namespace gspo::parallel {
namespace {
// Flattens `tensors` into one buffer, lets `op` transform it in place, and copies the result back.
template <class Op>
void through_flat(const std::vector<at::Tensor>& tensors, Op&& op) {
  if (tensors.empty()) return;
  std::vector<at::Tensor> parts;
  for (const auto& t : tensors) parts.push_back(t.reshape(-1));
  auto flat = torch::cat(parts);
  op(flat);
  int64_t off = 0;
  for (const auto& t : tensors) {
    t.copy_(flat.narrow(0, off, t.numel()).view_as(t));
    off += t.numel();
  }
}

// Cuts `tensors` into buckets of consecutive tensors of one dtype and device and about `bucket_bytes`.
template <class Op>
int64_t per_bucket(const std::vector<at::Tensor>& tensors, double bucket_bytes, Op&& op) {
  std::vector<at::Tensor> bucket;
  double bytes = 0;
  int64_t buckets = 0;
  auto flush = [&] {
    if (bucket.empty()) return;
    through_flat(bucket, op);
    ++buckets;
    bucket.clear();
    bytes = 0;
  };
  for (const auto& t : tensors) {
    const bool other_kind = !bucket.empty() && (t.scalar_type() != bucket[0].scalar_type() ||
                                               t.device() != bucket[0].device());
    if (other_kind || bytes + static_cast<double>(t.nbytes()) > bucket_bytes) flush();
    bucket.push_back(t);
    bytes += static_cast<double>(t.nbytes());
  }
  flush();
  return buckets;
}
}  // namespace

std::vector<char> params_with_grad(Comm& comm, const std::vector<at::Tensor>& params) {
  auto flags = torch::zeros({static_cast<int64_t>(params.size())}, torch::kFloat);
  for (size_t i = 0; i < params.size(); ++i) flags[static_cast<int64_t>(i)] = params[i].grad().defined() ? 1.0f : 0.0f;
  comm.all_reduce(flags, ReduceOp::kMax);
  std::vector<char> out(params.size());
  auto a = flags.accessor<float, 1>();
  for (size_t i = 0; i < params.size(); ++i) out[i] = a[static_cast<int64_t>(i)] > 0;
  return out;
}

int64_t all_reduce_gradients(Comm& comm, const std::vector<at::Tensor>& params, double bucket_bytes) {
  if (comm.world_size() == 1) return 0;
  const auto used = params_with_grad(comm, params);
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!used[i]) continue;
    auto p = params[i];
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  return per_bucket(grads, bucket_bytes, [&](at::Tensor& flat) { comm.all_reduce(flat); });
}

void broadcast_parameters(Comm& comm, const std::vector<at::Tensor>& params, double bucket_bytes) {
  if (comm.world_size() == 1) return;
  torch::NoGradGuard g;
  std::vector<at::Tensor> data;
  for (const auto& p : params) data.push_back(p.detach());
  per_bucket(data, bucket_bytes, [&](at::Tensor& flat) { comm.broadcast(flat, 0); });
}


}  // namespace gspo::parallel
