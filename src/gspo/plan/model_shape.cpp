#include "gspo/plan/model_shape.h"

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/model/manifest.h"

namespace gspo::plan {
namespace {

using nlohmann::json;

int64_t need_int(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw ConfigError(where + ": missing key '" + key + "'");
  const auto& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    throw ConfigError(where + ": '" + key + "' must be a non-negative integer (got " + v.dump() + ")");
  return v.get<int64_t>();
}

int64_t opt_int(const json& j, const char* key, int64_t fallback, const std::string& where) {
  return j.contains(key) && !j[key].is_null() ? need_int(j, key, where) : fallback;
}

bool opt_bool(const json& j, const char* key, bool fallback, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) throw ConfigError(where + ": '" + key + "' must be true or false (got " + j[key].dump() + ")");
  return j[key].get<bool>();
}

json parse(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError("'" + file + "' is not valid JSON: " + e.what());
  }
}

void check_positive(const ModelShape& s, const std::string& where) {
  const std::pair<const char*, int64_t> sizes[] = {{"vocab_size", s.vocab_size}, {"hidden_size", s.hidden_size},
                                                   {"num_layers", s.num_layers}, {"num_heads", s.num_heads},
                                                   {"num_kv_heads", s.num_kv_heads}, {"head_dim", s.head_dim}};
  for (const auto& [name, v] : sizes)
    if (v <= 0) throw ConfigError(where + ": " + name + " must be positive (got " + std::to_string(v) + ")");
  if (s.num_heads % s.num_kv_heads != 0)
    throw ConfigError(where + ": num_heads (" + std::to_string(s.num_heads) + ") must be a multiple of num_kv_heads (" +
                      std::to_string(s.num_kv_heads) + ")");
  // Sizes past these overflow the exact int64 parameter count (a negative count "fits" any device): no model has them.
  const std::pair<const char*, int64_t> bounded[] = {
      {"vocab_size", s.vocab_size}, {"hidden_size", s.hidden_size}, {"num_layers", s.num_layers},
      {"num_heads", s.num_heads}, {"num_kv_heads", s.num_kv_heads}, {"head_dim", s.head_dim},
      {"intermediate_size", s.intermediate_size}, {"num_experts", s.num_experts},
      {"moe_intermediate_size", s.moe_intermediate_size}};
  for (const auto& [name, v] : bounded)
    if (v > (int64_t{1} << 24))
      throw ConfigError(where + ": " + name + " " + std::to_string(v) + " is larger than any model gspo plans (at most " +
                        std::to_string(int64_t{1} << 24) + ")");
  const long double H = s.hidden_size, per_layer = H * s.num_heads * s.head_dim * 2 + H * s.num_kv_heads * s.head_dim * 2 +
                        3 * H * s.intermediate_size + 3 * H * s.moe_intermediate_size * s.num_experts;
  const long double estimate = per_layer * s.num_layers + 2 * H * s.vocab_size;
  if (estimate > 1e15L)
    throw ConfigError(where + ": these sizes make a model of about " + std::to_string(static_cast<double>(estimate)) +
                      " parameters, past what gspo plans (1e15)");
  for (int64_t l : s.moe_layers)
    if (l < 0 || l >= s.num_layers)
      throw ConfigError(where + ": MoE layer " + std::to_string(l) + " is outside 0.." + std::to_string(s.num_layers - 1));
  if (!s.moe_layers.empty() && (s.num_experts <= 0 || s.experts_per_token <= 0 || s.moe_intermediate_size <= 0 ||
                                s.experts_per_token > s.num_experts))
    throw ConfigError(where + ": MoE layers need num_experts > 0, 0 < num_experts_per_tok <= num_experts and "
                      "moe_intermediate_size > 0");
}

}  // namespace

bool ModelShape::is_moe_layer(int64_t layer) const {
  return std::find(moe_layers.begin(), moe_layers.end(), layer) != moe_layers.end();
}

int64_t ModelShape::layer_parameters(int64_t layer) const {
  const int64_t H = hidden_size, Q = num_heads * head_dim, K = num_kv_heads * head_dim;
  int64_t n = 2 * H;                                   // input and post-attention RMSNorm
  n += H * Q + 2 * H * K + Q * H + 2 * head_dim;       // q, k, v, o projections; q/k norms (always registered)
  if (qkv_bias) n += Q + 2 * K;
  if (o_bias) n += H;
  if (is_moe_layer(layer)) n += H * num_experts + num_experts * 3 * H * moe_intermediate_size;  // router + experts
  else n += 3 * H * intermediate_size;                 // gate, up, down
  return n;
}

LoraCount lora_count(const ModelShape& s, const config::ModelOptions& m) {
  const double r = static_cast<double>(m.lora_rank), H = s.hidden_size, Q = s.num_heads * s.head_dim,
               K = s.num_kv_heads * s.head_dim;
  auto wanted = [&](const char* name) {
    return std::find(m.lora_targets.begin(), m.lora_targets.end(), name) != m.lora_targets.end();
  };
  LoraCount c;
  for (int64_t l = 0; l < s.num_layers; ++l) {
    double adapters = 0, targets = 0;
    auto add = [&](const char* name, double out, double in, double copies) {
      if (!wanted(name)) return;
      adapters += copies * r * (in + out);
      targets += copies * in * out;
      c.largest_tensor = std::max(c.largest_tensor, r * std::max(in, out));
    };
    add("q_proj", Q, H, 1), add("k_proj", K, H, 1), add("v_proj", K, H, 1), add("o_proj", H, Q, 1);
    if (!s.is_moe_layer(l)) {
      const double I = s.intermediate_size;
      add("gate_proj", I, H, 1), add("up_proj", I, H, 1), add("down_proj", H, I, 1);
    } else if (m.lora_experts) {
      const double I = s.moe_intermediate_size, E = s.num_experts;
      add("gate_proj", I, H, E), add("up_proj", I, H, E), add("down_proj", H, I, E);
    }
    c.adapters += adapters;
    c.targets += targets;
    c.widest_layer_targets = std::max(c.widest_layer_targets, targets);
  }
  return c;
}

int64_t ModelShape::other_parameters() const {
  int64_t n = vocab_size * hidden_size + hidden_size;  // embedding, final norm
  if (!tie_word_embeddings) n += vocab_size * hidden_size;
  if (lm_head_bias) n += vocab_size;
  return n;
}

int64_t ModelShape::num_parameters() const {
  int64_t n = other_parameters();
  for (int64_t l = 0; l < num_layers; ++l) n += layer_parameters(l);
  return n;
}

int64_t ModelShape::largest_parameter() const {
  int64_t m = vocab_size * hidden_size;
  m = std::max(m, hidden_size * std::max(intermediate_size, moe_intermediate_size));
  return std::max(m, hidden_size * num_heads * head_dim);
}

ModelShape shape_from_hf_config(const std::string& json_text, const std::string& file) {
  const json j = parse(json_text, file);
  ModelShape s;
  s.source = file;
  s.architecture = j.value("model_type", std::string("llama"));
  const auto& a = s.architecture;
  if (a != "llama" && a != "qwen2" && a != "qwen3" && a != "qwen3_moe")
    throw ConfigError(file + ": model_type '" + a + "' is not supported (llama, qwen2, qwen3, qwen3_moe)");
  s.vocab_size = need_int(j, "vocab_size", file);
  s.hidden_size = need_int(j, "hidden_size", file);
  s.num_layers = need_int(j, "num_hidden_layers", file);
  s.num_heads = need_int(j, "num_attention_heads", file);
  s.num_kv_heads = opt_int(j, "num_key_value_heads", s.num_heads, file);
  s.head_dim = opt_int(j, "head_dim", s.num_heads > 0 ? s.hidden_size / s.num_heads : 0, file);
  s.intermediate_size = need_int(j, "intermediate_size", file);
  s.tie_word_embeddings = opt_bool(j, "tie_word_embeddings", false, file);
  const bool attention_bias = opt_bool(j, "attention_bias", false, file);
  s.qkv_bias = a == "qwen2" || attention_bias;  // as scripts/export_hf.py exports them
  s.o_bias = a != "qwen2" && attention_bias;
  s.qk_norm = a == "qwen3" || a == "qwen3_moe";
  if (a == "qwen3_moe") {
    const char* experts_key = j.contains("num_experts") ? "num_experts" : "num_local_experts";
    s.num_experts = need_int(j, experts_key, file);
    s.experts_per_token = need_int(j, "num_experts_per_tok", file);
    s.moe_intermediate_size = need_int(j, "moe_intermediate_size", file);
    const int64_t step = opt_int(j, "decoder_sparse_step", 1, file);
    if (step <= 0) throw ConfigError(file + ": 'decoder_sparse_step' must be positive");
    std::vector<int64_t> dense;
    if (j.contains("mlp_only_layers")) {
      if (!j["mlp_only_layers"].is_array()) throw ConfigError(file + ": 'mlp_only_layers' must be a list of layers");
      for (const auto& v : j["mlp_only_layers"]) {
        if (!v.is_number_integer()) throw ConfigError(file + ": 'mlp_only_layers' must be a list of layers");
        dense.push_back(v.get<int64_t>());
      }
    }
    for (int64_t l = 0; l < s.num_layers; ++l)
      if (s.num_experts > 0 && (l + 1) % step == 0 && std::find(dense.begin(), dense.end(), l) == dense.end())
        s.moe_layers.push_back(l);
  }
  check_positive(s, file);
  return s;
}

namespace {
// The "shape" object's sizes (scripts/gspo_model.py's shape_for) into `s`.
void fill_from_shape(const json& sh, const std::string& where, ModelShape& s) {
  s.intermediate_size = need_int(sh, "intermediate_size", where);
  s.tie_word_embeddings = opt_bool(sh, "tie_word_embeddings", false, where);
  s.qkv_bias = opt_bool(sh, "qkv_bias", false, where);
  s.o_bias = opt_bool(sh, "o_bias", false, where);
  s.qk_norm = opt_bool(sh, "qk_norm", false, where);
  s.lm_head_bias = opt_bool(sh, "lm_head_bias", false, where);
  if (sh.contains("moe_layers")) {
    s.num_experts = need_int(sh, "num_experts", where);
    s.experts_per_token = need_int(sh, "num_experts_per_tok", where);
    s.moe_intermediate_size = need_int(sh, "moe_intermediate_size", where);
    for (const auto& v : sh["moe_layers"]) {
      if (!v.is_number_integer()) throw ConfigError(where + ": 'moe_layers' must be a list of layer indices");
      s.moe_layers.push_back(v.get<int64_t>());
    }
  }
}
}  // namespace

ModelShape shape_from_manifest(const std::string& json_text, const std::string& file) {
  const auto m = model::parse_manifest(json_text, file);  // the contract's own checks and messages
  const json j = parse(json_text, file);
  if (!j.contains("shape")) {
    const auto* hf = j.contains("hf_source") && j["hf_source"].contains("files") ? &j["hf_source"]["files"] : nullptr;
    if (hf && hf->contains("config.json") && (*hf)["config.json"].is_string()) {
      auto s = shape_from_hf_config((*hf)["config.json"].get<std::string>(), file + " (hf_source config.json)");
      s.vocab_size = m.vocab_size;
      return s;
    }
    throw ModelContractError("'" + file + "': its manifest has no \"shape\" (exported before gspo plan); re-export it "
                             "with scripts/make_tiny_model.py or scripts/export_hf.py, or plan from the Hugging Face "
                             "config with --hf-config");
  }
  const json& sh = j["shape"];
  const std::string where = file + " (manifest shape)";
  ModelShape s;
  s.source = file;
  s.architecture = m.architecture;
  s.vocab_size = m.vocab_size;
  s.hidden_size = m.hidden_size;
  s.num_layers = m.num_layers;
  s.num_heads = m.num_heads;
  s.num_kv_heads = m.num_kv_heads;
  s.head_dim = m.head_dim;
  fill_from_shape(sh, where, s);
  check_positive(s, where);
  return s;
}

namespace {
// The manifest record of a TorchScript file (no tensor is read); IoError / ModelContractError.
std::string manifest_text(const std::string& policy_path) {
  {
    std::ifstream probe(policy_path, std::ios::binary);
    if (!probe) throw IoError("cannot read model file '" + policy_path + "': " + std::strerror(errno));
  }
  std::string text;
  try {
    caffe2::serialize::PyTorchStreamReader reader(policy_path);  // the zip's directory only; no tensor is read
    const std::string record = std::string("extra/") + model::kManifestFile;
    if (!reader.hasRecord(record))
      throw ModelContractError("'" + policy_path + "' has no " + model::kManifestFile + " (docs/model-contract.md)");
    auto [data, size] = reader.getRecord(record);
    text.assign(static_cast<const char*>(data.get()), size);
  } catch (const c10::Error& e) {
    throw ModelContractError("'" + policy_path + "' is not a TorchScript archive (" +
                             std::string(e.what_without_backtrace()).substr(0, 200) + ")");
  }
  return text;
}
}  // namespace

ModelShape read_model_shape(const std::string& policy_path) {
  return shape_from_manifest(manifest_text(policy_path), policy_path);
}

ModelShape read_reward_model_shape(const std::string& path) {
  const bool hf = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  ModelShape s;
  if (hf) {
    s = read_hf_config(path);
  } else {
    const std::string text = manifest_text(path);
    if (parse(text, path).value("format", std::string()) != "gspo-reward-model")
      throw ConfigError("reward.model_path '" + path + "' is not a reward model (export a *ForSequenceClassification "
                        "with scripts/export_hf.py --reward, or give its config.json to plan before exporting)");
    const json j = parse(text, path);
    if (!j.contains("shape")) throw ModelContractError("'" + path + "': its reward-model manifest has no \"shape\"");
    s.source = path;
    s.architecture = j.value("architecture", std::string("unknown"));
    s.vocab_size = need_int(j, "vocab_size", path);
    s.hidden_size = need_int(j, "hidden_size", path);
    s.num_layers = need_int(j, "num_layers", path);
    s.num_heads = need_int(j, "num_heads", path);
    s.num_kv_heads = need_int(j, "num_kv_heads", path);
    s.head_dim = need_int(j, "head_dim", path);
    fill_from_shape(j["shape"], path + " (manifest shape)", s);
    check_positive(s, path + " (manifest)");
  }
  s.tie_word_embeddings = true;  // no LM head: the embedding counts once
  s.lm_head_bias = false;
  return s;
}

int64_t reward_model_parameters(const ModelShape& shape) { return shape.num_parameters() + shape.hidden_size; }

ModelShape read_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return shape_from_hf_config(ss.str(), path);
}

}  // namespace gspo::plan
