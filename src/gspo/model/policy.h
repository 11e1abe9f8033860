// A TorchScript policy meeting docs/model-contract.md: loading with contract checks, full-sequence logits for
// training, KV-cache prefill/decode for sampling, saving with the manifest and tokenizer kept inside.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gspo/model/manifest.h"
#include "gspo/model/param_gate.h"

namespace gspo::model {

class ExpertRunner;  // expert_runner.h

// Inputs shared by every decoder layer of one full-sequence pass (private to the model; gspo only passes them on).
struct LayerContext {
  at::Tensor cos, sin;  // rotary tables [B, 1, T, D]
  at::Tensor mask;      // bool [B, 1, T, T] (true = may attend), or undefined = causal (rows whose real tokens are a prefix)
};

class Policy {
 public:
  // Loads `path` onto `device`. Throws IoError when the file is missing/unreadable, ModelContractError when it
  // is not TorchScript, lacks the manifest or one of the methods. Shapes are checked by check_contract().
  static Policy load(const std::string& path, c10::Device device = c10::kCPU);

  Policy(Policy&&) noexcept;
  Policy& operator=(Policy&&) noexcept;
  ~Policy();

  // A second Policy over this one's TorchScript module: the same parameters, buffers and submodules (nothing is
  // copied; a tensor swapped or set in one is seen by both), without this one's gates. Its whole-model methods run on
  // whatever the weights hold when called: with distributed.zero_stage 3 and adapters, the engine's whole hold
  // gathers the base and merges the adapters into it in place, and the sampler reads them through such a view.
  Policy ungated_view() const;

  const Manifest& manifest() const;
  const std::string& path() const;
  const std::string& tokenizer_json() const;  // the embedded tokenizer spec ("" when none)
  c10::Device device() const;  // where the weights are (CUDA devices always with their index)

  // [B, T] int64 ids and mask -> [B, T, V] logits, float32 or the weights' low-precision dtype (the contract
  // allows either; train/logprobs.h upcasts in chunks). Differentiable when grad mode is on.
  at::Tensor logits(const at::Tensor& ids, const at::Tensor& mask);
  // logits(ids, mask) of columns [first, T) only: [B, T - first, V]. Through the optional contract method
  // logits_from when the model has it (the lm_head then skips the columns before `first`), else a narrow of logits().
  at::Tensor logits_from(const at::Tensor& ids, const at::Tensor& mask, int64_t first);
  bool has_logits_from() const;
  // Empty cache for `batch` rows and `max_len` columns; layout private to the model.
  at::Tensor init_cache(int64_t batch, int64_t max_len);
  // Fills cache columns [0, T); returns [B, V] float32 logits of column T-1.
  at::Tensor prefill(const at::Tensor& ids, const at::Tensor& mask, at::Tensor& cache);
  // Writes column `start` for ids [B, 1] given mask [B, start + 1]; returns [B, V] float32 logits.
  at::Tensor decode(const at::Tensor& ids, const at::Tensor& mask, at::Tensor& cache, int64_t start);
  // The cache rows `rows` (int64 [B']) in that order; used to drop finished sequences.
  at::Tensor reorder_cache(const at::Tensor& cache, const at::Tensor& rows);

  // Optional contract method decode_static: decode with step-invariant shapes (mask [B, S_max] over every cache
  // column, 0 past `position`; position an int64 [1] tensor on the model's device), so a CUDA graph can replay it.
  bool has_static_decode() const;
  at::Tensor decode_static(const at::Tensor& ids, const at::Tensor& mask, at::Tensor& cache, const at::Tensor& position);

  // ---- Optional slot methods (docs/model-contract.md, "Slot methods", slot_api 1 to 3): the cache from init_cache(S, C)
  // as S rows ("slots") that each hold one sequence from column 0, at its own length. Call only when has_slots().
  bool has_slots() const;
  // The version (0 when none). 3: a row's decode reads only its live keys (a sequence-major cache; the flash kernel's
  // per-row key lengths on CUDA), so the sampler decodes every row in the slot pool on CUDA, budget or not.
  int64_t slot_api() const;
  // Prefills K prompts, ids [K, T] right-padded to T with lengths [K], once each, and writes prompt source[m]'s keys and
  // values into cache row slots[m], columns [0, T). Returns [K, V] float32 logits of each prompt's last token.
  at::Tensor prefill_slots(const at::Tensor& ids, const at::Tensor& lengths, at::Tensor& cache, const at::Tensor& slots,
                           const at::Tensor& source);
  // One token per slot: ids [S, 1], slot s's token at column columns[s] (int64 [S], also its position), attending over
  // its columns [0, columns[s]]; width >= max(columns) + 1 bounds the columns read. Returns [S, V] float32 logits.
  at::Tensor decode_slots(const at::Tensor& ids, at::Tensor& cache, const at::Tensor& columns, int64_t width);
  // Copies columns [0, columns) of cache rows src[m] to rows dst[m] (int64 [M] each), in place.
  void copy_slots(at::Tensor& cache, const at::Tensor& src, const at::Tensor& dst, int64_t columns);
  // slot_api 2: appends row m's first lengths[m] tokens of ids [M, K] (right-padded) to cache row slots[m] at columns
  // [columns[m], columns[m] + lengths[m]) (their positions), each attending over the row's columns up to its own;
  // needs columns[m] + K <= the cache's columns and width >= max(columns + lengths). Returns [M, V] float32 logits of
  // each row's last appended token (text written into a running sequence: a tool's output).
  bool has_append() const;
  at::Tensor append_slots(const at::Tensor& ids, const at::Tensor& lengths, at::Tensor& cache, const at::Tensor& slots,
                          const at::Tensor& columns, int64_t width);

  // Optional contract method: per layer, the fraction of routing slots each expert got in the last forward
  // (empty tensors for dense layers). Empty vector when the model has no expert_load method.
  std::vector<at::Tensor> expert_load();

  // ---- Optional per-layer methods (docs/model-contract.md, "Per-layer methods", layer_api 1): gspo runs
  // embed -> layer(0 .. num_layers-1) -> final_norm -> head itself, to checkpoint activations per layer and to
  // compute log-probs through a chunked head. Call them only when has_layers().
  bool has_layers() const;
  int64_t num_layers() const;
  // [B, T] ids -> [B, T, H] hidden states in the weights' dtype.
  at::Tensor embed(const at::Tensor& ids);
  // What each layer of a full-sequence pass over `mask` [B, T] needs (rotary tables, attention mask).
  LayerContext layer_context(const at::Tensor& mask);
  // Decoder layer `index`: [B, T, H] -> [B, T, H]. With `checkpoint` (and grad mode on) only `x` is kept for
  // backward, which re-runs the layer under grad mode and backpropagates through it (parameter gradients
  // accumulate as usual): activation memory O(B * T * H) per layer instead of the layer's whole graph.
  // `routes` (an MoE layer of a model with has_routing(); integer [B, T, top_k]): the experts each token uses
  // (Routing Replay: gating weights from the current router over them), kept for the recompute too.
  at::Tensor layer(int64_t index, const at::Tensor& x, const LayerContext& ctx, bool checkpoint,
                   const at::Tensor& routes = {});
  // The norm before the LM head, any leading shape.
  at::Tensor final_norm(const at::Tensor& x);
  // The LM head: weight [V, H] (the embedding when tied: the same tensor) and bias [V] (undefined when none).
  at::Tensor head_weight();
  at::Tensor head_bias();

  // ---- Optional shared-prefix method (docs/model-contract.md, "Shared-prefix method"; found by name, with the
  // per-layer methods): decoder layer `index` over responses that share prompts, each prompt run once (#71,
  // train/shared_prefix.h). xp [K, P, H]: K prompts, real tokens first; xr [M, R, H]: M responses, real tokens first.
  bool has_shared_layer() const;
  struct SharedContext {
    at::Tensor cos_p, sin_p;  // [K, 1, P, D] the prompts' rotary tables
    at::Tensor cos_r, sin_r;  // [M, 1, R, D] the responses' (positions continuing from their prompt's end)
    at::Tensor group;         // [M] int64: each response's prompt
    at::Tensor prompt_len;    // [K] int64: each prompt's real tokens
  };
  struct Shared {
    at::Tensor xp, xr;                // the layer's output over the prompts and the responses
    at::Tensor experts_p, experts_r;  // MoE: the experts each token used ([K, P, top_k], [M, R, top_k]); dense: empty
  };
  // Equal to layer() over each prompt + response row up to float rounding: a prompt's gradient is its responses'
  // summed. `checkpoint` (grad mode on) keeps only xp and xr, as layer() keeps x; routes_p / routes_r replay experts
  // as layer()'s routes do (both or neither). Gates as layer().
  Shared shared_layer(int64_t index, const at::Tensor& xp, const at::Tensor& xr, const SharedContext& ctx,
                      bool checkpoint, const at::Tensor& routes_p = {}, const at::Tensor& routes_r = {});

  // ---- Optional routing methods (docs/model-contract.md, "Routing methods", route_api 1; only with the per-layer
  // methods): which experts each token of an MoE layer went to, and layers run with given experts (routes above).
  bool has_routing() const;
  int64_t route_api() const;  // 0 (none), 1, or 2 (routed_feed_forward: can_record_routes below)
  // Decoder layers whose feed-forward routes tokens to experts (empty: dense, or no routing methods).
  const std::vector<int64_t>& moe_layers() const;
  // Decoder layer `index` without checkpointing, and the experts its router chose: [B, T, top_k] int64 for an MoE
  // layer, an empty tensor for a dense one. Same output as layer(index, x, ctx, false).
  struct Routed {
    at::Tensor out, experts;
  };
  Routed routed_layer(int64_t index, const at::Tensor& x, const LayerContext& ctx);

  // ---- Optional expert-parallel methods (docs/model-contract.md, "Expert-parallel methods", ep_api 1; with the
  // per-layer methods): an MoE layer in two parts, so gspo can run its experts on the ranks that hold them
  // (parallel/expert_parallel.h). Call the others only when has_expert_parallel().
  bool has_expert_parallel() const;
  // Decoder layer `index` up to its feed-forward: {h, n} with h = x + attention and n its post-attention norm, so that
  // layer() = h + the feed-forward of n. The layer is held through the gates, as layer() holds it.
  std::pair<at::Tensor, at::Tensor> attention_block(int64_t index, const at::Tensor& x, const LayerContext& ctx);
  // Decoder layer `index`'s router: {top_k, norm_topk_prob}; {0, false} for a dense layer.
  std::pair<int64_t, bool> moe_routing(int64_t index);
  // ep_api 2 (with slot_api 2): the slot methods' passes one layer at a time, so a rollout's MoE layers can run their
  // experts elsewhere. While a runner is set (model/expert_runner.h; not owned, null to unset), prefill_slots,
  // decode_slots and append_slots run that way, each MoE layer's feed-forward through the runner (the whole-model
  // check is not made: the runner holds the experts); the other layers through the model's feed_forward.
  bool has_expert_slots() const;
  void set_expert_runner(ExpertRunner* runner);
  ExpertRunner* expert_runner() const;
  // Decoder layer `index`'s feed-forward (its MLP, or its routed experts) of n [..., H] (ep_api 2).
  at::Tensor feed_forward(int64_t index, const at::Tensor& n);
  // Rollout Routing Replay's record (an MoE model with route_api 2, ep_api 2 and slot_api 2: can_record_routes()). While on,
  // prefill_slots, decode_slots and append_slots run one layer at a time, each layer's feed-forward through the
  // model's routed_feed_forward, and pass_routes() holds the experts of the last such pass: int64 [B x T, MoE layers,
  // top_k] on the model's device, the pass's tokens in its (row, column) order (padding included), the MoE layers in
  // moe_layers() order. The experts recorded are the ones the layer ran: with an expert runner set, the ones its ranks
  // ran each token through (ExpertRunner::feed_forward's experts).
  bool can_record_routes() const;
  void record_routes(bool on);
  const at::Tensor& pass_routes() const;

  std::vector<at::Tensor> parameters() const;
  // Every parameter by its module name ("layers.3.self_attn.q_proj.weight"), each once (a tied weight under its first
  // name), in the module's order.
  std::vector<std::pair<std::string, at::Tensor>> named_parameters() const;
  // The tensor the module's parameter `name` holds now; std::out_of_range when it has none of that name.
  at::Tensor parameter(const std::string& name) const;
  // Makes the module read `value` as parameter `name` (any tensor of its shape: a gate's merged weight with its
  // autograd graph) and returns the tensor it held. std::out_of_range when it has none of that name.
  at::Tensor swap_parameter(const std::string& name, const at::Tensor& value);
  // parameters() grouped for sharding: [0] everything outside the decoder layers (embedding, final norm, head),
  // [i + 1] decoder layer i's; each parameter once. A parameter belongs to layer i when its name has the segment
  // "layers.<i>." (docs/model-contract.md, "Per-layer methods"). Throws ModelContractError when the names do not
  // give num_layers() layers. Needs has_layers().
  std::vector<std::vector<at::Tensor>> parameter_units() const;
  // Gates (model/param_gate.h): layer() and routed_layer() acquire and release their layer's weights through every
  // gate added, in a chain (GateChain: ZeRO-3's gather first, then a gate that transforms the whole weights), and the
  // whole-model methods (logits, prefill, ...) refuse to run unless every gate is whole(). A gate must outlive its
  // place in the chain: remove_gate() it before it goes.
  void add_gate(ParamGate* gate);
  void remove_gate(ParamGate* gate);
  // Casts every floating parameter in place to `dtype` (buffers such as rotary tables keep their precision).
  void set_param_dtype(c10::ScalarType dtype);
  // Moves the buffers, and the parameters not there yet, to `device` (each keeps its dtype); device() follows.
  void move_to(c10::Device device);
  int64_t num_parameters() const;
  // Writes the policy (current weights, manifest, tokenizer) as TorchScript to `path`.
  void save(const std::string& path) const;
  // Names of the contract methods present in the file.
  std::vector<std::string> methods() const;

 // Opaque: defined in policy_impl.h, private to src/gspo/model (policy.cpp, policy_layers.cpp).
  struct Impl;

 private:
  explicit Policy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Runs the policy on a small batch and checks every method's output shape, dtype and KV-cache agreement with
// the full forward. Throws ModelContractError naming the method and what was wrong. Returns the largest
// |decode - forward| logit difference seen.
double check_contract(Policy& policy);

// A policy that is run, never trained (a bf16 sampling copy, the KL reference, a rollout rank's policy): loaded on
// `device`, cast to `dtype` when it differs from the file's, no parameter requiring gradients.
Policy load_frozen(const std::string& path, c10::Device device, std::optional<c10::ScalarType> dtype = std::nullopt);

// What identifies a policy's weights: the sum and the sum of squares of every parameter, in double (on the host).
// Equal weights give equal values: ranks compare it after the initial broadcast, and a checkpoint of adapters records
// its base's to refuse another one.
std::array<double, 2> weights_fingerprint(const Policy& policy);

}  // namespace gspo::model
