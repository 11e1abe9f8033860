// Low-rank adapters (LoRA) merged into a policy's decoder-layer weights as each layer runs: the seam param_gate.h
// keeps for them. For every targeted linear weight W [out, in] of a decoder layer (frozen, in the policy's dtype) the
// adapter holds A [r, in] and B [out, r] in float32, and while the layer is held (ParamGate::acquire) the module reads
//     W' = W + (alpha / r) B A        (cast to W's dtype)
// in W's place, computed with autograd on, so a backward through the layer reaches A and B and nothing else; release()
// puts W back. The TorchScript code is untouched, so every exported model works without re-exporting (dense, MoE
// experts, tied embeddings: only decoder-layer projections are targets).
//
// Cost per targeted weight and use: the product B A (2 r out in FLOPs, ~1/T of the layer's own matmul over T tokens)
// and W' (out x in elements of W's dtype) alive while the layer runs; in training W' and its gradient exist only
// inside the layer's forward and its backward (with activation checkpointing: the recompute), one layer at a time.
// The whole-model methods (logits, prefill, decode) would read W without the adapters, so the gate is never whole():
// they refuse while it is added; sampling runs on a copy the adapters are merged into (merge_into).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/model/param_gate.h"

namespace gspo::model {

class Policy;

struct LoraSpec {
  int64_t rank = 8;
  double alpha = 16;
  std::vector<std::string> targets{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  bool experts = false;  // MoE: every expert's projections get adapters too (a router never does)
  uint64_t seed = 0;     // A's initialisation (the same on every rank)
  std::string rank_from = "model.lora_rank";  // where `rank` came from, for messages
};

// The adapters model.lora_rank / lora_alpha / lora_targets / lora_experts ask for, A drawn from `seed` (train.seed:
// the trainers and the rollout ranks draw the same).
LoraSpec lora_spec(const config::ModelOptions& m, uint64_t seed);


class LoraAdapters final : public ParamGate {
 public:
  struct Adapter {
    std::string name;  // the base weight's parameter name ("layers.3.self_attn.q_proj.weight")
    int64_t layer = 0;
    at::Tensor A, B;  // float32 leaves with requires_grad, on the policy's device
  };

  // Adapters for every targeted weight of `policy` (which must have the per-layer methods; all its parameters are
  // frozen: requires_grad false, so no base weight ever gets a gradient), A initialised as PEFT does
  // (Kaiming-uniform with a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in))) and B = 0, so the adapted model starts equal to
  // the base. Throws ConfigError naming the targets when no weight matches or rank < 1.
  LoraAdapters(Policy& policy, const LoraSpec& spec);
  ~LoraAdapters() override;

  const std::vector<Adapter>& adapters() const { return adapters_; }
  // Moves every A and B to `device` as new leaves (before an optimizer takes them): a policy that distributed.
  // zero_stage 3 loads on the host to shard gets its adapters there first.
  void move_to(c10::Device device);
  std::vector<at::Tensor> parameters() const;  // A then B of each adapter, in adapters() order
  double scale() const { return scale_; }      // alpha / rank
  int64_t num_parameters() const;               // elements of every A and B
  // Writes W + scale B A (no autograd) into the same-named weights of `target`, a copy of the base (a sampling copy),
  // or the policy itself (a model to evaluate with the adapters, which are then not to be trained further).
  void merge_into(Policy& target) const;
  // Makes `copy` (a copy of the base, e.g. loaded on the host) read the policy's own frozen tensors for every weight
  // no adapter targets, where the dtypes agree, so only the targeted weights are its own (what merge_into writes).
  // Returns the elements now shared. A Qwen3-30B-A3B with attention adapters then copies 0.9 G of its 30.5 G weights.
  int64_t share_untargeted(Policy& copy) const;

  // Off (false): acquire() and release() leave the weights alone, so the policy runs its frozen base: the KL
  // reference when that is the base (train/step.cpp), with no second copy of it. std::logic_error while a layer is
  // held. AdaptersOff below switches them off for a scope.
  void set_enabled(bool on);
  bool enabled() const { return enabled_; }

  void acquire(int64_t layer) override;
  void release(int64_t layer) override;
  void backward_done(int64_t) override {}
  bool whole() const override { return false; }
  bool frees_weights() const override { return false; }

 private:
  Policy& policy_;
  double scale_;
  std::vector<Adapter> adapters_;
  std::vector<std::vector<size_t>> by_layer_;  // adapters of each decoder layer
  std::vector<int64_t> holds_;                 // nested acquires per layer
  std::vector<at::Tensor> base_;               // per adapter: W, kept while the merged weight is in its place
  bool enabled_ = true;
};

// The adapters switched off for a scope (the policy runs its base), on again when it ends, by a return or an exception.
class AdaptersOff {
 public:
  explicit AdaptersOff(LoraAdapters& lora) : lora_(lora) { lora_.set_enabled(false); }
  ~AdaptersOff() { lora_.set_enabled(true); }
  AdaptersOff(const AdaptersOff&) = delete;
  AdaptersOff& operator=(const AdaptersOff&) = delete;

 private:
  LoraAdapters& lora_;
};

}  // namespace gspo::model
