// Expert parallelism's exchange and Qwen3-MoE's sparse MLP over it (expert_parallel.h).
#include "gspo/parallel/expert_parallel.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "gspo/parallel/comm.h"

namespace gspo::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows exchanged by Comm::all_to_all, differentiably: the gradient goes back by the exchange with the counts swapped.
// The backward is a collective too: it runs on every rank whatever its rows (zeros when the output had no gradient).
struct Exchange : torch::autograd::Function<Exchange> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm, std::vector<int64_t> send,
                            std::vector<int64_t> recv) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["send"] = send;
    ctx->saved_data["recv"] = recv;
    ctx->saved_data["in_shape"] = x.sizes().vec();
    ctx->saved_data["like"] = x.new_empty({0});  // dtype and device of a gradient made here
    return reinterpret_cast<Comm*>(comm)->all_to_all(x.contiguous(), send, recv);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* comm = reinterpret_cast<Comm*>(ctx->saved_data["comm"].toInt());
    const auto send = ctx->saved_data["send"].toIntVector(), recv = ctx->saved_data["recv"].toIntVector();
    at::Tensor g = grads[0];
    if (!g.defined()) {  // the output was not used: zeros, and the exchange still runs (the other ranks wait for it)
      auto shape = ctx->saved_data["in_shape"].toIntVector();
      int64_t rows = 0;
      for (auto c : recv) rows += c;
      shape[0] = rows;
      g = torch::zeros(shape, ctx->saved_data["like"].toTensor().options());
    }
    return {comm->all_to_all(g.contiguous(), recv, send), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor exchange(const at::Tensor& x, Comm& comm, const std::vector<int64_t>& send, const std::vector<int64_t>& recv) {
  return Exchange::apply(x, reinterpret_cast<int64_t>(&comm), send, recv);
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  const auto c = t.to(torch::kCPU).to(torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

}  // namespace

ExpertRoute::ExpertRoute(const at::Tensor& experts, int64_t num_experts, Comm& group) : group_(group) {
  const int64_t E = group.world_size();
  if (experts.dim() != 2 || experts.scalar_type() != torch::kLong)
    throw std::invalid_argument("ExpertRoute: experts must be [tokens, k] int64");
  if (num_experts < E || num_experts % E != 0)
    throw std::invalid_argument("ExpertRoute: " + std::to_string(num_experts) + " experts do not split over " +
                                std::to_string(E) + " ranks");
  tokens_ = experts.size(0);
  k_ = experts.size(1);
  per_rank_ = num_experts / E;
  first_ = group.rank() * per_rank_;
  torch::NoGradGuard g;
  const auto flat = experts.reshape(-1).to(torch::kCPU);
  if (flat.numel() > 0 && (flat.min().item<int64_t>() < 0 || flat.max().item<int64_t>() >= num_experts))
    throw std::invalid_argument("ExpertRoute: an expert index outside [0, " + std::to_string(num_experts) + ")");
  order_ = std::get<1>(flat.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
  const auto sorted = flat.index_select(0, order_);
  inverse_ = torch::empty_like(order_).index_copy_(0, order_, torch::arange(flat.numel(), order_.options()));
  send_ = to_vector(torch::bincount(sorted.div(per_rank_, "floor"), {}, E));
  // Every rank learns what it receives: one row of counts to each rank, then the expert index of each row.
  const std::vector<int64_t> ones(static_cast<size_t>(E), 1);
  recv_ = to_vector(group.all_to_all(torch::tensor(send_, torch::kLong).view({E, 1}), ones, ones));
  local_expert_ = group.all_to_all(sorted.view({-1, 1}), send_, recv_).view({-1}) - first_;
  const auto device = experts.device();
  order_ = order_.to(device);
  inverse_ = inverse_.to(device);
  local_expert_ = local_expert_.to(device);
}

at::Tensor ExpertRoute::dispatch(const at::Tensor& x) const {
  if (x.dim() != 2 || x.size(0) != tokens_)
    throw std::invalid_argument("ExpertRoute::dispatch: x must be [" + std::to_string(tokens_) + ", H]");
  const auto token_of_pair = order_.div(k_, "floor");
  return exchange(x.index_select(0, token_of_pair), group_, send_, recv_);
}

at::Tensor ExpertRoute::combine(const at::Tensor& y, const at::Tensor& weights) const {
  const auto back = exchange(y, group_, recv_, send_);  // [T k, H], sorted by expert
  const auto pairs = back.index_select(0, inverse_).view({tokens_, k_, y.size(1)});  // (token, choice) order
  return (pairs * weights.unsqueeze(-1)).sum(1);
}

at::Tensor expert_parallel_moe(const at::Tensor& x, const at::Tensor& router, const at::Tensor& gate,
                               const at::Tensor& up, const at::Tensor& down, int64_t top_k, bool norm_topk, Comm& group,
                               const at::Tensor& routes, at::Tensor* chosen) {
  const auto probs = torch::softmax(torch::matmul(x.to(torch::kFloat), router.to(torch::kFloat).t()), -1);
  at::Tensor weights, experts;
  if (routes.defined()) {  // Routing Replay: the recorded experts, weighted by the current router
    experts = routes.to(torch::kLong);
    weights = probs.gather(1, experts);
  } else {
    std::tie(weights, experts) = probs.topk(top_k, -1);
  }
  if (norm_topk) weights = weights / weights.sum(-1, true);
  const ExpertRoute route(experts, router.size(0), group);
  if (gate.size(0) != route.local_experts())
    throw std::invalid_argument("expert_parallel_moe: " + std::to_string(gate.size(0)) + " local experts given, the "
                                "group's split holds " + std::to_string(route.local_experts()));
  const auto xr = route.dispatch(x);
  // xr x 0, not zeros_like: the combine stays in xr's graph on a rank whose experts get no row, so its backward (a
  // collective) runs on every rank, as the forward did
  auto yr = xr * 0;
  for (int64_t e = 0; e < route.local_experts(); ++e) {
    const auto rows = (route.local_expert() == e).nonzero().view({-1});
    if (rows.numel() == 0) continue;
    const auto xe = xr.index_select(0, rows);
    const auto h = torch::silu(torch::matmul(xe, gate[e].t())) * torch::matmul(xe, up[e].t());
    yr = yr.index_add(0, rows, torch::matmul(h, down[e].t()));
  }
  if (chosen) *chosen = experts;
  return route.combine(yr, weights.to(x.scalar_type()));
}

}  // namespace gspo::parallel
