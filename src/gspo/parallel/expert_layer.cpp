#include "gspo/parallel/expert_layer.h"

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "gspo/parallel/comm.h"
#include "gspo/parallel/expert_parallel.h"

namespace gspo::parallel {
namespace {

at::Tensor run(model::Policy& policy, int64_t index, const at::Tensor& x, const model::LayerContext& ctx, Comm& group,
               const at::Tensor& routes, at::Tensor* chosen = nullptr);

// The layer's forward without a graph, keeping x (and the tables); backward recomputes it under grad mode and
// backpropagates through the fresh graph: parameter gradients accumulate into .grad there, x's is returned.
struct Checkpointed : torch::autograd::Function<Checkpointed> {
  static at::Tensor forward(torch::autograd::AutogradContext* c, const at::Tensor& x, int64_t policy, int64_t index,
                            const at::Tensor& cos, const at::Tensor& sin, const std::optional<at::Tensor>& mask,
                            const std::optional<at::Tensor>& routes, int64_t group, int64_t chosen) {
    c->save_for_backward({x, cos, sin});
    c->saved_data["mask"] = mask ? c10::IValue(*mask) : c10::IValue();  // (not differentiated: no saved variable)
    c->saved_data["routes"] = routes ? c10::IValue(*routes) : c10::IValue();
    c->saved_data["policy"] = policy;
    c->saved_data["index"] = index;
    c->saved_data["group"] = group;
    return run(*reinterpret_cast<model::Policy*>(policy), index, x, {cos, sin, mask.value_or(at::Tensor())},
               *reinterpret_cast<Comm*>(group), routes.value_or(at::Tensor()), reinterpret_cast<at::Tensor*>(chosen));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* c,
                                                 torch::autograd::variable_list grads) {
    auto saved = c->get_saved_variables();
    auto x = saved[0].detach().requires_grad_(true);
    at::Tensor y;
    {
      torch::AutoGradMode on(true);
      auto tensor_or_none = [](const c10::IValue& v) { return v.isNone() ? at::Tensor() : v.toTensor(); };
      y = run(*reinterpret_cast<model::Policy*>(c->saved_data["policy"].toInt()), c->saved_data["index"].toInt(), x,
              {saved[1], saved[2], tensor_or_none(c->saved_data["mask"])},
              *reinterpret_cast<Comm*>(c->saved_data["group"].toInt()), tensor_or_none(c->saved_data["routes"]));
    }
    torch::autograd::backward({y}, {grads[0]});
    return {x.grad(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

std::optional<at::Tensor> opt(const at::Tensor& t) { return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt; }

}  // namespace

at::Tensor expert_parallel_layer(model::Policy& policy, int64_t index, const at::Tensor& x,
                                 const model::LayerContext& ctx, Comm& group, const at::Tensor& routes,
                                 bool checkpoint, at::Tensor* chosen) {
  if (!checkpoint || !torch::GradMode::is_enabled()) return run(policy, index, x, ctx, group, routes, chosen);
  return Checkpointed::apply(x, reinterpret_cast<int64_t>(&policy), index, ctx.cos, ctx.sin, opt(ctx.mask), opt(routes),
                             reinterpret_cast<int64_t>(&group), reinterpret_cast<int64_t>(chosen));
}

namespace {

at::Tensor run(model::Policy& policy, int64_t index, const at::Tensor& x, const model::LayerContext& ctx, Comm& group,
               const at::Tensor& routes, at::Tensor* chosen) {
  const auto [top_k, norm_topk] = policy.moe_routing(index);
  if (top_k == 0) {
    if (chosen) *chosen = torch::empty({0}, torch::kLong);
    return policy.layer(index, x, ctx, /*checkpoint=*/false);
  }
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
                                     torch::stack(down), top_k, norm_topk, group, flat_routes, chosen);
  if (chosen) *chosen = chosen->view({n.size(0), n.size(1), top_k});
  return h + y.view(n.sizes());
}

}  // namespace
}  // namespace gspo::parallel
