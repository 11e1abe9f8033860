// The slot methods' passes one layer at a time (ep_api 2), the seam of expert parallelism's rollout
// (model/expert_runner.h): each MoE layer's feed-forward goes to the runner, the rest runs in the model.
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "gspo/core/error.h"
#include "gspo/model/expert_runner.h"
#include "gspo/model/policy.h"
#include "gspo/model/policy_impl.h"

namespace gspo::model {

bool Policy::has_expert_slots() const { return impl_->ep_api >= 2 && impl_->slot_api >= 2; }

void Policy::set_expert_runner(ExpertRunner* runner) {
  if (runner && !has_expert_slots())
    throw ModelContractError("'" + impl_->path + "' cannot sample with its experts on other ranks: it needs the "
                             "expert-parallel methods of ep_api 2 and the slot methods of slot_api 2 "
                             "(docs/model-contract.md; re-export it with scripts/export_hf.py)");
  impl_->runner = runner;
}

ExpertRunner* Policy::expert_runner() const { return impl_->runner; }

at::Tensor Policy::feed_forward(int64_t index, const at::Tensor& n) {
  if (impl_->ep_api < 2)
    throw ModelContractError("'" + impl_->path + "' has no feed_forward method (ep_api 2; docs/model-contract.md)");
  GateHold hold(impl_->gate, index);
  return impl_->module.get_method("feed_forward")({index, n}).toTensor();
}

bool Policy::can_record_routes() const {
  return impl_->route_api >= 2 && has_expert_slots() && !impl_->moe_layers.empty();  // (a dense model: nothing to record)
}

void Policy::record_routes(bool on) {
  if (on && !can_record_routes())
    throw ModelContractError("'" + impl_->path + "' cannot record the experts of its rollout: it needs the routing "
                             "method routed_feed_forward (route_api 2) and the slot passes one layer at a time "
                             "(ep_api 2, slot_api 2; docs/model-contract.md): re-export it with scripts/export_hf.py");
  impl_->record_routes = on;
  impl_->pass_routes = at::Tensor();
}

const at::Tensor& Policy::pass_routes() const { return impl_->pass_routes; }

at::Tensor run_slot_pass(Policy::Impl& impl, ExpertRunner* runner, const char* context, std::vector<c10::IValue> args,
                         at::Tensor& cache, int64_t start, const at::Tensor& slots, const c10::IValue& source,
                         const c10::IValue& last) {
  const auto ctx = impl.module.get_method(context)(std::move(args)).toTuple();
  const auto& e = ctx->elements();
  at::Tensor x = e[0].toTensor();
  const c10::IValue &cos = e[1], &sin = e[2], &mask = e[3], &columns = e[4];
  if (runner) runner->begin_pass(x.size(0) * x.size(1));
  auto attention = impl.module.get_method("slot_attention");
  auto feed_forward = impl.module.get_method("feed_forward");
  std::vector<at::Tensor> routes;  // impl.record_routes: each MoE layer's experts [tokens, top_k]
  for (int64_t i = 0; i < impl.num_layers; ++i) {
    GateHold hold(impl.gate, i);
    const auto hn = attention({i, x, cos, sin, mask, cache, start, slots, source, columns}).toTuple();
    const auto& h = hn->elements()[0].toTensor();
    const auto& n = hn->elements()[1].toTensor();
    const bool moe = std::find(impl.moe_layers.begin(), impl.moe_layers.end(), i) != impl.moe_layers.end();
    if (runner && moe) {  // (recording: the experts the runner's ranks ran each token through)
      at::Tensor chosen;
      x = h + runner->feed_forward(i, n.reshape({-1, n.size(-1)}), impl.record_routes ? &chosen : nullptr)
                  .view(n.sizes());
      if (impl.record_routes) routes.push_back(chosen);
    } else if (impl.record_routes && moe) {
      const auto out = impl.module.get_method("routed_feed_forward")({i, n, c10::IValue()}).toTuple();
      const auto& chosen = out->elements()[1].toTensor();
      routes.push_back(chosen.reshape({-1, chosen.size(-1)}));
      x = h + out->elements()[0].toTensor();
    } else {
      x = h + feed_forward({i, n}).toTensor();
    }
  }
  if (impl.record_routes) impl.pass_routes = torch::stack(routes, 1);  // [tokens, MoE layers, top_k]
  return impl.module.get_method("slot_logits")({x, last}).toTensor();
}

void finish_expert_passes(Policy& policy) {
  if (auto* runner = policy.expert_runner()) runner->finish();
}

}  // namespace gspo::model
