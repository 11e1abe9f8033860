// Low-rank adapters in a checkpoint (model.lora_rank > 0): adapter.pt holds A and B of every adapter (float32, in
// LoraAdapters::adapters() order), adapter.json says what they are: rank, alpha, targets, experts, each adapter's base
// weight name, and the base model's path and weights fingerprint (the base itself is not copied). A resume and
// `gspo generate / eval / inspect --adapter` read them back onto the base they name.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::model { class LoraAdapters; class Policy; }

namespace gspo::io {

struct AdapterMeta {
  int64_t rank = 0;
  double alpha = 0;
  std::vector<std::string> targets;
  bool experts = false;
  std::vector<std::string> names;           // each adapter's base weight ("layers.0.self_attn.q_proj.weight")
  std::string base_path;                    // model.path the adapters were trained on
  std::array<double, 2> base_fingerprint{};  // model::weights_fingerprint of that base as loaded (before any cast)
};

// Writes adapter.pt and adapter.json into `dir` (a checkpoint's temporary directory). `meta`'s names are filled in.
void save_adapters(const std::string& dir, const model::LoraAdapters& lora, AdapterMeta meta);
// adapter.json of `dir`; IoError naming the file and key when it is missing or malformed.
AdapterMeta read_adapter_meta(const std::string& dir);
// Copies `dir`'s A and B into `lora`, whose adapters must be the same weights with the same shapes (ConfigError
// naming the first difference otherwise). IoError naming adapter.pt and the tensor, before anything is copied, when
// a tensor is not 2-D floating point, its rank is not adapter.json's, or it holds a NaN or Inf.
void load_adapters(const std::string& dir, model::LoraAdapters& lora);
// Refuses (ConfigError naming both) a base whose path or fingerprint differs from the one the adapters were trained
// on; a path that differs but the same fingerprint (a copied file) is accepted.
void check_adapter_base(const std::string& dir, const AdapterMeta& meta, const std::string& base_path,
                        const std::array<double, 2>& base_fingerprint);
// Merges the adapters in `dir` into `base` in place (W + (alpha / r) B A in each targeted weight): a model to run or
// to fine-tune whole, no gate left behind. Checks the base first (check_adapter_base). Returns what adapter.json says.
AdapterMeta merge_adapter_dir(model::Policy& base, const std::string& dir);

}  // namespace gspo::io
