// Private to src/gspo/model: the state behind a Policy, shared by policy.cpp (the contract's methods),
// policy_layers.cpp (the optional per-layer methods and activation checkpointing), policy_slots.cpp (the slot
// methods of continuous batching) and policy_routing.cpp (MoE routing and Routing Replay).
#pragma once
#include <torch/script.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "gspo/model/manifest.h"
#include "gspo/model/param_gate.h"
#include "gspo/model/policy.h"

namespace gspo::model {

struct Policy::Impl {
  torch::jit::Module module;
  Manifest manifest;
  std::string path;
  std::string tokenizer;
  c10::Device device = c10::kCPU;
  bool has_logits_from = false;  // the optional contract method, probed once at load
  int64_t layer_api = 0;         // version of the per-layer methods (0 = none), probed once at load
  int64_t num_layers = 0;        // decoder layers, when layer_api > 0
  bool has_shared_layer = false;  // the optional shared_layer method (with the per-layer methods), probed once at load
  int64_t slot_api = 0;          // version of the slot methods (0 = none), probed once at load
  int64_t route_api = 0;         // version of the routing methods (0 = none), probed once at load
  std::vector<int64_t> moe_layers;  // decoder layers that route tokens to experts, when route_api > 0
  int64_t ep_api = 0;               // version of the expert-parallel methods (0 = none), probed once at load
  ExpertRunner* runner = nullptr;   // set: the slot methods run one layer at a time, MoE layers through it
  bool record_routes = false;       // the slot methods run one layer at a time, recording the experts (pass_routes)
  at::Tensor pass_routes;           // the last recorded pass's experts [tokens, MoE layers, top_k]
  GateChain gates;                  // who holds the layers' weights (add_gate): ZeRO-3, adapters
  ParamGate* gate = nullptr;        // &gates while it holds any, else nullptr (no gate: nothing to ask)
};

// Sets impl.layer_api and impl.num_layers from the model's layer_api() and num_decoder_layers() (0 when it has no
// layer_api). Throws ModelContractError for a version this gspo does not know, or a model that has layer_api() but
// lacks one of the methods that version promises.
void probe_layers(Policy::Impl& impl);
// The version an optional interface's `api_method` reports (0 when the model lacks it). Throws ModelContractError
// for a version outside [oldest, known] (oldest <= 0: `known` only), or a model that has it but lacks one of
// `methods` (those every known version has); `section` names the part of docs/model-contract.md and `kind` the
// methods ("per-layer method").
int64_t probe_interface(const Policy::Impl& impl, const char* api_method, int64_t known,
                        std::initializer_list<const char*> methods, const char* section, const char* kind,
                        int64_t oldest = 0);
// Sets impl.slot_api from the model's slot_api() (0 when absent; 1, or 2 with append_slots). Throws
// ModelContractError for an unknown version or a model that lacks a method its version promises.
void probe_slots(Policy::Impl& impl);
// Sets impl.route_api and impl.moe_layers from the model's route_api() and moe_layers() (0 / none when absent).
// Throws ModelContractError for an unknown version, missing routing methods, routing without the per-layer methods
// (call after probe_layers) or a layer index outside [0, num_layers).
void probe_routing(Policy::Impl& impl);
// A slot method's pass one layer at a time (ep_api 2): `context` (prefill_context, decode_context, append_context) with
// `args`, then every layer's slot_attention (start, slots, source as the slot method passes them) and its feed-forward,
// through `runner` for the MoE layers (null: the model's feed_forward for every layer; with impl.record_routes, its
// routed_feed_forward, the experts kept in impl.pass_routes), then slot_logits(x, last).
at::Tensor run_slot_pass(Policy::Impl& impl, ExpertRunner* runner, const char* context, std::vector<c10::IValue> args,
                         at::Tensor& cache, int64_t start, const at::Tensor& slots, const c10::IValue& source,
                         const c10::IValue& last);
// Sets impl.ep_api from the model's ep_api() (0 when absent). Throws ModelContractError for an unknown version, a
// missing expert-parallel method, or one without the per-layer methods (call after probe_layers).
void probe_expert_parallel(Policy::Impl& impl);
// The model's routed_layer(index, x, cos, sin, mask, routes): (output, experts); undefined mask/routes pass as None.
Policy::Routed run_routed(torch::jit::Module& module, int64_t index, const at::Tensor& x, const at::Tensor& cos,
                          const at::Tensor& sin, const at::Tensor& mask, const at::Tensor& routes);
// Decoder layer `index`'s weights held through `gate` for a scope (nothing without a gate), with the layer expected
// next (`next`, -1: none) passed on as ParamGate::prefetch. release() only frees.
class GateHold {
 public:
  GateHold(ParamGate* gate, int64_t index, int64_t next = -1) : gate_(gate), index_(index) {
    if (!gate_) return;
    gate_->acquire(index_);
    if (next >= 0) gate_->prefetch(next);
  }
  ~GateHold() {
    if (gate_) gate_->release(index_);
  }
  GateHold(const GateHold&) = delete;
  GateHold& operator=(const GateHold&) = delete;

 private:
  ParamGate* gate_;
  int64_t index_;
};

// Throws Error naming `method` when a gate holds the decoder layers apart (a whole-model method would read emptied
// weights).
void require_whole(const Policy::Impl& impl, const char* method);
// Runs `layer` (routes undefined) or `routed_layer` with the routes given; the layer's output only.
at::Tensor run_layer(torch::jit::Module& module, int64_t index, const at::Tensor& x, const at::Tensor& cos,
                     const at::Tensor& sin, const at::Tensor& mask, const at::Tensor& routes);

}  // namespace gspo::model
