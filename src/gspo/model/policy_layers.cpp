// The optional per-layer methods of a policy (layer_api 1) and activation checkpointing of one decoder layer.
#include <torch/torch.h>

#include <regex>
#include <set>
#include <stdexcept>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/model/policy_impl.h"

namespace gspo::model {
namespace {

constexpr int64_t kLayerApi = 1;  // the version this gspo drives

c10::IValue mask_value(const at::Tensor& mask) { return mask.defined() ? c10::IValue(mask) : c10::IValue(); }
at::Tensor saved_or_none(const c10::IValue& v) { return v.isNone() ? at::Tensor() : v.toTensor(); }

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// One decoder layer whose forward runs without a graph (autograd Functions run forward with grad off) and keeps
// only its input; backward re-runs the layer under grad mode from that input and backpropagates through the
// fresh graph. Parameter gradients accumulate into .grad inside that nested backward (the layer's parameters are
// not inputs of this node), the input's gradient is returned. With a gate (zero_stage 3) the layer's weights are
// acquired for the recompute, handed back with backward_done() once their gradients are in, and released. The layer is
// deterministic (no dropout; MoE routing is
// a function of the input, or given as `routes`: Routing Replay), so the recomputed graph is the forward's.
struct CheckpointedLayer : torch::autograd::Function<CheckpointedLayer> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, torch::jit::Module module, int64_t index,
                            const at::Tensor& cos, const at::Tensor& sin, const std::optional<at::Tensor>& mask_arg,
                            const std::optional<at::Tensor>& routes_arg, int64_t gate) {
    const at::Tensor mask = mask_arg.value_or(at::Tensor());  // optional: Functions take no undefined tensor
    const at::Tensor routes = routes_arg.value_or(at::Tensor());
    ctx->save_for_backward({x, cos, sin});
    ctx->saved_data["module"] = module._ivalue();
    ctx->saved_data["index"] = index;
    ctx->saved_data["mask"] = mask_value(mask);
    ctx->saved_data["routes"] = mask_value(routes);
    ctx->saved_data["gate"] = gate;  // a ParamGate* (0: none); IValues hold no raw pointers
    return run_layer(module, index, x, cos, sin, mask, routes);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    torch::jit::Module module(ctx->saved_data["module"].toObject());
    const at::Tensor mask = saved_or_none(ctx->saved_data["mask"]);
    const at::Tensor routes = saved_or_none(ctx->saved_data["routes"]);
    const int64_t index = ctx->saved_data["index"].toInt();
    auto* gate = reinterpret_cast<ParamGate*>(static_cast<intptr_t>(ctx->saved_data["gate"].toInt()));
    auto x = saved[0].detach().requires_grad_(true);
    GateHold hold(gate, index, index > 0 ? index - 1 : 0);  // backward runs down; then the next forward from 0
    at::Tensor y;
    {
      torch::AutoGradMode on(true);
      y = run_layer(module, index, x, saved[1], saved[2], mask, routes);
    }
    torch::autograd::backward({y}, {grads[0]});
    if (gate) gate->backward_done(index);
    return {x.grad(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The model's shared_layer(index, xp, cos_p, sin_p, xr, cos_r, sin_r, group, prompt_len, routes_p, routes_r).
Policy::Shared run_shared(torch::jit::Module& module, int64_t index, const at::Tensor& xp, const at::Tensor& xr,
                          const Policy::SharedContext& c, const at::Tensor& routes_p, const at::Tensor& routes_r) {
  auto out = module.get_method("shared_layer")({index, xp, c.cos_p, c.sin_p, xr, c.cos_r, c.sin_r, c.group,
                                                c.prompt_len, mask_value(routes_p), mask_value(routes_r)})
                 .toTuple();
  const auto& e = out->elements();
  return {e.at(0).toTensor(), e.at(1).toTensor(), e.at(2).toTensor(), e.at(3).toTensor()};
}

// CheckpointedLayer's form for shared_layer: two inputs (the prompts, the responses), two outputs and the experts
// (not differentiable). Only xp, xr and the rotary tables are kept; backward recomputes the layer from them.
struct CheckpointedShared : torch::autograd::Function<CheckpointedShared> {
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& xp, const at::Tensor& xr,
                             torch::jit::Module module, int64_t index, const at::Tensor& cos_p, const at::Tensor& sin_p,
                             const at::Tensor& cos_r, const at::Tensor& sin_r, const at::Tensor& group,
                             const at::Tensor& prompt_len, const std::optional<at::Tensor>& routes_p_arg,
                             const std::optional<at::Tensor>& routes_r_arg, int64_t gate) {
    const at::Tensor routes_p = routes_p_arg.value_or(at::Tensor()), routes_r = routes_r_arg.value_or(at::Tensor());
    ctx->save_for_backward({xp, xr, cos_p, sin_p, cos_r, sin_r, group, prompt_len});
    ctx->saved_data["module"] = module._ivalue();
    ctx->saved_data["index"] = index;
    ctx->saved_data["routes_p"] = mask_value(routes_p);
    ctx->saved_data["routes_r"] = mask_value(routes_r);
    ctx->saved_data["gate"] = gate;
    auto y = run_shared(module, index, xp, xr, {cos_p, sin_p, cos_r, sin_r, group, prompt_len}, routes_p, routes_r);
    ctx->mark_non_differentiable({y.experts_p, y.experts_r});
    return {y.xp, y.xr, y.experts_p, y.experts_r};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto s = ctx->get_saved_variables();
    torch::jit::Module module(ctx->saved_data["module"].toObject());
    const int64_t index = ctx->saved_data["index"].toInt();
    auto* gate = reinterpret_cast<ParamGate*>(static_cast<intptr_t>(ctx->saved_data["gate"].toInt()));
    auto xp = s[0].detach().requires_grad_(true), xr = s[1].detach().requires_grad_(true);
    GateHold hold(gate, index, index > 0 ? index - 1 : 0);
    Policy::Shared y;
    {
      torch::AutoGradMode on(true);
      y = run_shared(module, index, xp, xr, {s[2], s[3], s[4], s[5], s[6], s[7]},
                     saved_or_none(ctx->saved_data["routes_p"]), saved_or_none(ctx->saved_data["routes_r"]));
    }
    std::vector<at::Tensor> outs, gs;  // an output no loss reached has no gradient
    if (grads[0].defined()) outs.push_back(y.xp), gs.push_back(grads[0]);
    if (grads[1].defined()) outs.push_back(y.xr), gs.push_back(grads[1]);
    if (!outs.empty()) torch::autograd::backward(outs, gs);
    if (gate) gate->backward_done(index);
    tensor_list out(13);  // one per forward input
    out[0] = xp.grad(), out[1] = xr.grad();
    return out;
  }
};

std::optional<at::Tensor> optional_of(const at::Tensor& t) {
  return t.defined() ? std::optional<at::Tensor>(t) : std::nullopt;
}

// What layer() and shared_layer() check before running decoder layer `index`: sharded weights (a gate that frees
// them) train only checkpointed, since the graph would keep freed weights. Returns the layer expected next for the
// gate's prefetch: the layer above; after the last one, this layer again in its backward (training) or the first
// layer of the next pass.
int64_t layer_next(const Policy::Impl& impl, int64_t index, bool checkpoint, bool grad) {
  if (impl.gate && grad && !checkpoint && impl.gate->frees_weights())
    throw Error("decoder layer " + std::to_string(index) + ": sharded weights (distributed.zero_stage 3) train "
                "with activation checkpointing only (train.activation_checkpointing: true)");
  const int64_t last = impl.num_layers - 1;
  return index < last ? index + 1 : checkpoint && grad ? index : 0;
}

}  // namespace

at::Tensor run_layer(torch::jit::Module& module, int64_t index, const at::Tensor& x, const at::Tensor& cos,
                     const at::Tensor& sin, const at::Tensor& mask, const at::Tensor& routes) {
  if (!routes.defined()) return module.get_method("layer")({index, x, cos, sin, mask_value(mask)}).toTensor();
  return run_routed(module, index, x, cos, sin, mask, routes).out;
}

Policy::Routed run_routed(torch::jit::Module& module, int64_t index, const at::Tensor& x, const at::Tensor& cos,
                          const at::Tensor& sin, const at::Tensor& mask, const at::Tensor& routes) {
  auto out = module.get_method("routed_layer")({index, x, cos, sin, mask_value(mask), mask_value(routes)}).toTuple();
  return {out->elements().at(0).toTensor(), out->elements().at(1).toTensor()};
}

int64_t probe_interface(const Policy::Impl& impl, const char* api_method, int64_t known,
                        std::initializer_list<const char*> methods, const char* section, const char* kind,
                        int64_t oldest) {
  auto api = impl.module.find_method(api_method);
  if (!api) return 0;
  const int64_t version = (*api)({}).toInt();
  if (oldest <= 0) oldest = known;
  if (version < oldest || version > known)
    throw ModelContractError("'" + impl.path + "': " + api_method + "() is " + std::to_string(version) +
                             ", this gspo knows version" +
                             (oldest == known ? " " + std::to_string(known)
                                              : "s " + std::to_string(oldest) + " to " + std::to_string(known)) +
                             " (docs/model-contract.md, " + section +
                             "); re-export the model with this gspo's scripts/export_hf.py");
  for (const char* name : methods)
    if (!impl.module.find_method(name))
      throw ModelContractError("'" + impl.path + "' has " + api_method + "() " + std::to_string(version) +
                               " but lacks the " + kind + " '" + name + "' (docs/model-contract.md)");
  return version;
}

void probe_layers(Policy::Impl& impl) {
  const int64_t version = probe_interface(impl, "layer_api", kLayerApi,
                                          {"num_decoder_layers", "embed", "layer_context", "layer", "final_norm",
                                           "head_weight", "head_bias"},
                                          "Per-layer methods", "per-layer method");
  if (version == 0) return;
  impl.num_layers = impl.module.get_method("num_decoder_layers")({}).toInt();
  if (impl.num_layers < 1)
    throw ModelContractError("'" + impl.path + "': num_decoder_layers() is " + std::to_string(impl.num_layers));
  impl.layer_api = version;
  impl.has_shared_layer = impl.module.find_method("shared_layer").has_value();
}

bool Policy::has_layers() const { return impl_->layer_api > 0; }
int64_t Policy::num_layers() const { return impl_->num_layers; }

at::Tensor Policy::embed(const at::Tensor& ids) { return impl_->module.get_method("embed")({ids}).toTensor(); }

LayerContext Policy::layer_context(const at::Tensor& mask) {
  auto t = impl_->module.get_method("layer_context")({mask}).toTuple();
  const auto& e = t->elements();
  return {e.at(0).toTensor(), e.at(1).toTensor(), e.at(2).isNone() ? at::Tensor() : e.at(2).toTensor()};
}

at::Tensor Policy::layer(int64_t index, const at::Tensor& x, const LayerContext& c, bool checkpoint,
                         const at::Tensor& routes) {
  const bool grad = at::GradMode::is_enabled();
  GateHold hold(impl_->gate, index, layer_next(*impl_, index, checkpoint, grad));
  if (checkpoint && grad) {
    // The node is recorded only when an input needs a gradient: with a frozen embedding (adapters train, model/lora.h)
    // the first layer's input does not, yet the parameters inside must get theirs (as transformers'
    // enable_input_require_grads does for PEFT under gradient checkpointing).
    const auto in = x.requires_grad() ? x : x.detach().requires_grad_(true);
    return CheckpointedLayer::apply(in, impl_->module, index, c.cos, c.sin, optional_of(c.mask), optional_of(routes),
                                    static_cast<int64_t>(reinterpret_cast<intptr_t>(impl_->gate)));
  }
  return run_layer(impl_->module, index, x, c.cos, c.sin, c.mask, routes);
}

bool Policy::has_shared_layer() const { return impl_->has_shared_layer; }

Policy::Shared Policy::shared_layer(int64_t index, const at::Tensor& xp, const at::Tensor& xr, const SharedContext& c,
                                    bool checkpoint, const at::Tensor& routes_p, const at::Tensor& routes_r) {
  if (!impl_->has_shared_layer) throw ModelContractError("'" + impl_->path + "' has no shared_layer method");
  if (routes_p.defined() != routes_r.defined())
    throw std::invalid_argument("shared_layer: replay the prompts' and the responses' experts together");
  const bool grad = at::GradMode::is_enabled();
  GateHold hold(impl_->gate, index, layer_next(*impl_, index, checkpoint, grad));
  if (!(checkpoint && grad)) return run_shared(impl_->module, index, xp, xr, c, routes_p, routes_r);
  auto need = [](const at::Tensor& t) { return t.requires_grad() ? t : t.detach().requires_grad_(true); };
  auto y = CheckpointedShared::apply(need(xp), need(xr), impl_->module, index, c.cos_p, c.sin_p, c.cos_r, c.sin_r,
                                     c.group, c.prompt_len, optional_of(routes_p), optional_of(routes_r),
                                     static_cast<int64_t>(reinterpret_cast<intptr_t>(impl_->gate)));
  return {y[0], y[1], y[2], y[3]};
}

std::vector<std::vector<at::Tensor>> Policy::parameter_units() const {
  if (!has_layers()) throw ModelContractError("'" + impl_->path + "' has no per-layer methods to shard by layer");
  static const std::regex kLayer(R"((^|\.)layers\.(\d+)\.)");
  std::vector<std::vector<at::Tensor>> units(impl_->num_layers + 1);
  std::set<const c10::TensorImpl*> seen;
  std::vector<std::string> unnamed;
  for (const auto& np : impl_->module.named_parameters()) {
    if (!seen.insert(np.value.unsafeGetTensorImpl()).second) continue;  // a tied weight's second name
    std::smatch m;
    int64_t unit = 0;
    if (std::regex_search(np.name, m, kLayer)) {
      const int64_t i = std::stoll(m[2].str());
      if (i >= impl_->num_layers)
        throw ModelContractError("'" + impl_->path + "': parameter '" + np.name + "' names decoder layer " +
                                 std::to_string(i) + ", but the model has " + std::to_string(impl_->num_layers));
      unit = i + 1;
    }
    units[unit].push_back(np.value);
  }
  for (int64_t i = 0; i < impl_->num_layers; ++i)
    if (units[i + 1].empty())
      throw ModelContractError("'" + impl_->path + "': no parameter is named layers." + std::to_string(i) +
                               ".*; sharding by decoder layer needs that naming (docs/model-contract.md)");
  return units;
}

at::Tensor Policy::final_norm(const at::Tensor& x) {
  return impl_->module.get_method("final_norm")({x}).toTensor();
}

at::Tensor Policy::head_weight() { return impl_->module.get_method("head_weight")({}).toTensor(); }

at::Tensor Policy::head_bias() {
  auto b = impl_->module.get_method("head_bias")({});
  return b.isNone() ? at::Tensor() : b.toTensor();
}

}  // namespace gspo::model
