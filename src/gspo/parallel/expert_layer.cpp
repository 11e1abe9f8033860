#include "gspo/parallel/expert_layer.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "gspo/parallel/comm.h"
#include "gspo/parallel/expert_parallel.h"

namespace gspo::parallel {

at::Tensor expert_parallel_layer(model::Policy& policy, int64_t index, const at::Tensor& x,
                                 const model::LayerContext& ctx, Comm& group, const at::Tensor& routes) {
  const auto [top_k, norm_topk] = policy.moe_routing(index);
  if (top_k == 0) return policy.layer(index, x, ctx, /*checkpoint=*/false);
  auto [h, n] = policy.attention_block(index, x, ctx);
  const std::string prefix = "layers." + std::to_string(index) + ".mlp.";
  const auto router = policy.parameter(prefix + "gate.weight");
  const int64_t experts = router.size(0), W = group.world_size();
  if (experts % W != 0)
    throw std::invalid_argument("layer " + std::to_string(index) + "'s " + std::to_string(experts) +
                                " experts do not split over " + std::to_string(W) + " ranks");
  const int64_t per = experts / W, first = group.rank() * per;
  std::vector<at::Tensor> gate, up, down;
  for (int64_t e = first; e < first + per; ++e) {
    const std::string ex = prefix + "experts." + std::to_string(e) + ".";
    gate.push_back(policy.parameter(ex + "gate_proj.weight"));
    up.push_back(policy.parameter(ex + "up_proj.weight"));
    down.push_back(policy.parameter(ex + "down_proj.weight"));
  }
  const int64_t H = n.size(-1);
  const auto flat_routes = routes.defined() ? routes.reshape({-1, top_k}) : routes;
  const auto y = expert_parallel_moe(n.reshape({-1, H}), router, torch::stack(gate), torch::stack(up),
                                     torch::stack(down), top_k, norm_topk, group, flat_routes);
  return h + y.view(n.sizes());
}

}  // namespace gspo::parallel
