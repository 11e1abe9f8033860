// The JSON manifest carried inside a policy file as the TorchScript extra file "gspo_manifest.json"
// (docs/model-contract.md lists every field).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::model {

inline constexpr const char* kManifestFile = "gspo_manifest.json";
inline constexpr const char* kTokenizerFile = "gspo_tokenizer.json";
inline constexpr int64_t kContractVersion = 1;

struct Manifest {
  int64_t contract_version = 0;
  std::string architecture;     // llama, qwen2, qwen3, qwen3_moe, ...
  int64_t vocab_size = 0;       // logits' last dimension
  int64_t max_seq_len = 0;      // prompt + response columns the model supports
  int64_t bos_token_id = -1;    // -1 = none
  int64_t eos_token_id = -1;    // required: ends a response
  std::vector<int64_t> eos_token_ids;  // every id that ends a response (eos_token_id first; optional field, e.g.
                                       // Llama-3.x Instruct's <|end_of_text|>, <|eom_id|>, <|eot_id|>)
  int64_t pad_token_id = -1;    // id written in padded columns (masked out anyway)
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  std::string dtype;            // float32, bfloat16, float16
  int64_t moe_capture_rows = 0;  // MoE exports: CUDA passes of at most this many tokens route without reading back to
                                 // the host (a decode step of a pool that size can be captured); 0 = none say so
  std::string raw_json;         // the manifest text as stored
};

// Whether `id` ends a response (one of eos_token_ids).
bool is_eos(const Manifest& m, int64_t id);

// Parses and checks the manifest text; throws ModelContractError naming `file` and the missing/bad field.
Manifest parse_manifest(const std::string& json_text, const std::string& file);

}  // namespace gspo::model
