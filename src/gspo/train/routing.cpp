#include "gspo/train/routing.h"

#include <torch/torch.h>

#include <numeric>

#include "gspo/core/error.h"

namespace gspo::train {

at::Tensor RouteRecord::replay(int64_t index) const {
  if (index >= static_cast<int64_t>(experts.size()) || !experts[index].defined()) return {};
  return experts[index].to(at::kLong);
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
