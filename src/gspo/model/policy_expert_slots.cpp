// The slot methods' passes one layer at a time (ep_api 2), the seam of expert parallelism's rollout
// (model/expert_runner.h): each MoE layer's feed-forward goes to the runner, the rest runs in the model.
#include <torch/torch.h>

#include <algorithm>

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
  for (int64_t i = 0; i < impl.num_layers; ++i) {
    GateHold hold(impl.gate, i);
    const auto hn = attention({i, x, cos, sin, mask, cache, start, slots, source, columns}).toTuple();
    const auto& h = hn->elements()[0].toTensor();
    const auto& n = hn->elements()[1].toTensor();
    const bool moe = std::find(impl.moe_layers.begin(), impl.moe_layers.end(), i) != impl.moe_layers.end();
    if (runner && moe)
      x = h + runner->feed_forward(i, n.reshape({-1, n.size(-1)})).view(n.sizes());
    else
      x = h + feed_forward({i, n}).toTensor();
  }
  return impl.module.get_method("slot_logits")({x, last}).toTensor();
}

void finish_expert_passes(Policy& policy) {
  if (auto* runner = policy.expert_runner()) runner->finish();
}

}  // namespace gspo::model
