// The optional routing methods of a policy (route_api 1): the experts an MoE layer routes each token to, and layers
// run with recorded experts (Routing Replay, train/routing.h).
#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/model/policy_impl.h"

namespace gspo::model {

void probe_routing(Policy::Impl& impl) {
  const int64_t version = probe_interface(impl, "route_api", 2, {"moe_layers", "routed_layer"}, "Routing methods",
                                          "routing method", 1);
  if (version == 0) return;
  if (version >= 2 && !impl.module.find_method("routed_feed_forward"))
    throw ModelContractError("'" + impl.path + "' has route_api() 2 but lacks the routing method "
                             "'routed_feed_forward' (docs/model-contract.md)");
  if (impl.layer_api == 0)
    throw ModelContractError("'" + impl.path + "' has route_api() but not the per-layer methods it runs through "
                             "(layer_api; docs/model-contract.md, \"Routing methods\")");
  for (const auto& v : impl.module.get_method("moe_layers")({}).toIntList()) {
    if (v < 0 || v >= impl.num_layers)
      throw ModelContractError("'" + impl.path + "': moe_layers() names layer " + std::to_string(v) + " of " +
                               std::to_string(impl.num_layers));
    impl.moe_layers.push_back(v);
  }
  impl.route_api = version;
}

bool Policy::has_routing() const { return impl_->route_api > 0; }
int64_t Policy::route_api() const { return impl_->route_api; }
const std::vector<int64_t>& Policy::moe_layers() const { return impl_->moe_layers; }

Policy::Routed Policy::routed_layer(int64_t index, const at::Tensor& x, const LayerContext& c) {
  GateHold hold(impl_->gate, index, index + 1 < impl_->num_layers ? index + 1 : 0);
  return run_routed(impl_->module, index, x, c.cos, c.sin, c.mask, at::Tensor());
}

void probe_expert_parallel(Policy::Impl& impl) {
  const int64_t version = probe_interface(impl, "ep_api", 2, {"attention_block", "moe_routing"},
                                          "Expert-parallel methods", "expert-parallel method", 1);
  if (version > 0 && impl.layer_api == 0)
    throw ModelContractError("'" + impl.path + "' has ep_api() but not the per-layer methods it runs through "
                             "(layer_api; docs/model-contract.md, \"Expert-parallel methods\")");
  if (version >= 2)
    for (const char* m : {"prefill_context", "decode_context", "append_context", "slot_attention", "feed_forward",
                          "slot_logits"})
      if (!impl.module.find_method(m))
        throw ModelContractError("'" + impl.path + "' has ep_api() " + std::to_string(version) +
                                 " but lacks the expert-parallel method '" + m + "' (docs/model-contract.md)");
  impl.ep_api = version;
}

bool Policy::has_expert_parallel() const { return impl_->ep_api > 0; }

std::pair<at::Tensor, at::Tensor> Policy::attention_block(int64_t index, const at::Tensor& x, const LayerContext& c) {
  if (!has_expert_parallel())
    throw ModelContractError("'" + impl_->path + "' has no expert-parallel methods (ep_api; docs/model-contract.md, "
                             "\"Expert-parallel methods\"): re-export it with scripts/export_hf.py");
  GateHold hold(impl_->gate, index, index + 1 < impl_->num_layers ? index + 1 : 0);
  auto out = impl_->module.get_method("attention_block")(
      {index, x, c.cos, c.sin, c.mask.defined() ? c10::IValue(c.mask) : c10::IValue()}).toTuple();
  return {out->elements()[0].toTensor(), out->elements()[1].toTensor()};
}

std::pair<int64_t, bool> Policy::moe_routing(int64_t index) {
  auto out = impl_->module.get_method("moe_routing")({index}).toTuple();
  return {out->elements()[0].toInt(), out->elements()[1].toBool()};
}

}  // namespace gspo::model
