#include "gspo/train/routing.h"

#include <torch/torch.h>

#include <numeric>

#include "gspo/core/error.h"

namespace gspo::train {

at::Tensor RouteRecord::replay(int64_t index) const {
  if (index >= static_cast<int64_t>(experts.size()) || !experts[index].defined()) return {};
  return experts[index].to(at::kLong);
}

RouteRecord rollout_record(const at::Tensor& routes, const at::Tensor& mask, int64_t P, int64_t width,
                           const std::vector<int64_t>& moe_layers, int64_t num_layers) {
  const int64_t n = routes.size(0), T = routes.size(1), L = routes.size(2), k = routes.size(3);
  if (mask.size(0) != n || mask.size(1) != T || L != static_cast<int64_t>(moe_layers.size()))
    throw Error("the rollout's routes [" + std::to_string(n) + ", " + std::to_string(T) + ", " + std::to_string(L) +
                ", " + std::to_string(k) + "] do not fit rows of " + std::to_string(mask.size(1)) + " columns and " +
                std::to_string(moe_layers.size()) + " MoE layers");
  const auto opts = mask.options().dtype(at::kLong);
  const auto shift = P - mask.narrow(1, 0, P).sum(1);  // [n] left padding per row (as the per-layer pass aligns them)
  if (width <= 0) width = std::max<int64_t>(1, mask.sum(1).max().item<int64_t>());
  const auto col = torch::arange(width, opts).unsqueeze(0);
  const auto src = (col + shift.unsqueeze(1)).clamp_max(T - 1);  // [n, W] source column of each column
  const auto aligned = routes.gather(1, src.view({n, width, 1, 1}).expand({n, width, L, k})).to(at::kShort);
  RouteRecord out;
  out.experts.assign(static_cast<size_t>(num_layers), at::Tensor());
  for (int64_t j = 0; j < L; ++j) out.experts[static_cast<size_t>(moe_layers[j])] = aligned.select(2, j).contiguous();
  // Response tokens but each row's last: columns [P - shift, real - 1) of the aligned row.
  const auto real = mask.sum(1).unsqueeze(1);
  out.response = (col >= (P - shift).unsqueeze(1)) & (col < real - 1);
  return out;
}

void check_rollout_routes(const at::Tensor& routes, int64_t rows, int64_t moe_layers, int64_t top_k, int64_t experts,
                          const std::string& model) {
  const std::string head = "algorithm.routing_replay rollout: ";
  if (!routes.defined())
    throw Error(head + "the step's rows came without the rollout's experts (a sampler that did not record them)");
  if (routes.dim() != 4 || routes.size(0) != rows || routes.size(2) != moe_layers || routes.size(3) != top_k)
    throw Error(head + "the rollout's experts of the step's " + std::to_string(rows) + " rows are " +
                c10::str(routes.sizes()) + " ([rows, columns, MoE layers, top-k]), but '" + model + "' has " +
                std::to_string(moe_layers) + " MoE layers of top-" + std::to_string(top_k) +
                ": rows recorded by another model are not replayed");
  if (routes.numel() > 0) {
    const int64_t most = routes.max().item<int64_t>();
    if (most >= experts)
      throw Error(head + "the rollout's experts name expert " + std::to_string(most) + ", but '" + model +
                  "' has " + std::to_string(experts) + " a layer: rows recorded by another model are not replayed");
  }
}

void RoutingChange::add(const RouteRecord& before, const RouteRecord& after, const std::vector<int64_t>& moe_layers) {
  const double n = before.response.sum().item<double>();
  for (size_t j = 0; j < moe_layers.size(); ++j) {
    const auto& a = before.experts.at(moe_layers[j]);
    const auto& b = after.experts.at(moe_layers[j]);
    if (!a.defined() || !b.defined() || a.sizes() != b.sizes())
      throw Error("routing records of MoE layer " + std::to_string(moe_layers[j]) + " do not match");
    auto differs = std::get<0>(a.sort(-1)).ne(std::get<0>(b.sort(-1))).any(-1);  // [n, W]
    changed[j] += (differs & before.response).sum().item<double>();
    tokens[j] += n;
  }
}

double RoutingChange::changed_total() const { return std::accumulate(changed.begin(), changed.end(), 0.0); }
double RoutingChange::tokens_total() const { return std::accumulate(tokens.begin(), tokens.end(), 0.0); }

}  // namespace gspo::train
