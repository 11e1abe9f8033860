// A decoder's sizes, enough to count its parameters and size its activations and KV cache without its weights:
// read from a policy file's manifest ("shape", written by scripts/gspo_model.py) or from a Hugging Face config.json
// (llama, qwen2, qwen3, qwen3_moe), so a run can be planned before anything is exported.
// Non-goal: architectures scripts/gspo_model.py does not export (sliding windows, MLA, ...).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"

namespace gspo::plan {

struct ModelShape {
  std::string architecture;             // llama, qwen2, qwen3, qwen3_moe
  std::string source;                   // the file it was read from (for messages)
  int64_t vocab_size = 0;               // V
  int64_t hidden_size = 0;              // H
  int64_t num_layers = 0;               // L
  int64_t num_heads = 0;                // query heads
  int64_t num_kv_heads = 0;             // key/value heads
  int64_t head_dim = 0;                 // D
  int64_t intermediate_size = 0;        // dense SwiGLU width
  bool tie_word_embeddings = false;     // lm_head shares the embedding
  bool qkv_bias = false;                // Qwen2: q/k/v projections carry a bias
  bool o_bias = false;                  // o_proj carries a bias (llama attention_bias)
  bool qk_norm = false;                 // Qwen3: RMSNorm over each head's q and k
  bool lm_head_bias = false;            // a bias on the LM head (tiny models' prior)
  int64_t num_experts = 0;              // MoE: experts per MoE layer; 0 = dense
  int64_t experts_per_token = 0;        // MoE: top-k
  int64_t moe_intermediate_size = 0;    // MoE: each expert's SwiGLU width
  std::vector<int64_t> moe_layers;      // MoE: indices of the layers whose MLP is the sparse one

  bool is_moe_layer(int64_t layer) const;
  // Parameters of decoder layer `layer`, of everything else (embedding, final norm, head), and in all. Counted
  // as scripts/gspo_model.py builds the module (q/k norms exist even where unused; a tied head counts once), so
  // num_parameters() equals model::Policy::num_parameters() of the exported file.
  int64_t layer_parameters(int64_t layer) const;
  int64_t other_parameters() const;
  int64_t num_parameters() const;
  // The largest single parameter tensor (the embedding or the head, in practice).
  int64_t largest_parameter() const;
};

// Low-rank adapters on `shape` as model/lora.h makes them (model.lora_rank, lora_targets, lora_experts): r (in + out)
// parameters a targeted weight [out, in] of a decoder layer (an MoE layer's experts only with lora_experts).
struct LoraCount {
  double adapters = 0;              // every A and B
  double targets = 0;               // elements of every targeted weight
  double widest_layer_targets = 0;  // elements of the targeted weights of the decoder layer that has the most
  double largest_tensor = 0;        // the largest single A or B
};
LoraCount lora_count(const ModelShape& shape, const config::ModelOptions& m);


// Hugging Face config.json text -> shape; ConfigError naming `file` and the missing or bad key.
ModelShape shape_from_hf_config(const std::string& json_text, const std::string& file);
// A policy manifest's text (gspo_manifest.json) -> shape: its "shape" object, else its hf_source config.json;
// ModelContractError naming `file` when it holds neither (exported before gspo plan: re-export or use --hf-config).
ModelShape shape_from_manifest(const std::string& json_text, const std::string& file);
// Reads only the manifest record of a policy file (no weights are loaded); IoError / ModelContractError.
ModelShape read_model_shape(const std::string& policy_path);
// Reads a config.json file.
ModelShape read_hf_config(const std::string& path);
// reward.model_path's shape (a learned reward model: the decoder and a one-output score head, no LM head): its
// manifest when the path is a reward model exported by scripts/export_hf.py --reward (ConfigError naming the key for
// a policy), else a Hugging Face config.json (planning before the export). tie_word_embeddings is set, so
// num_parameters() counts no LM head; reward_model_parameters() adds the head.
ModelShape read_reward_model_shape(const std::string& path);
int64_t reward_model_parameters(const ModelShape& shape);

}  // namespace gspo::plan
