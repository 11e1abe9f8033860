#include "gspo/model/manifest.h"

#include <nlohmann/json.hpp>

#include "gspo/core/error.h"

namespace gspo::model {
namespace {
using nlohmann::json;

template <class T>
T field(const json& j, const char* key, const std::string& file, bool required, T fallback) {
  if (!j.contains(key)) {
    if (required) throw ModelContractError(file + ": manifest " + kManifestFile + " lacks required field '" + key + "'");
    return fallback;
  }
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw ModelContractError(file + ": manifest field '" + key + "' has the wrong type (got " + j.at(key).dump() + ")");
  }
}
}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& file) {
  if (text.empty()) {
    throw ModelContractError(file + ": no " + std::string(kManifestFile) +
                             " inside the TorchScript file; export it with scripts/make_tiny_model.py or "
                             "scripts/export_hf.py (see docs/model-contract.md)");
  }
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ModelContractError(file + ": " + kManifestFile + " is not valid JSON: " + e.what());
  }
  Manifest m;
  m.raw_json = text;
  m.contract_version = field<int64_t>(j, "contract_version", file, true, 0);
  if (m.contract_version != kContractVersion) {
    throw ModelContractError(file + ": contract_version " + std::to_string(m.contract_version) +
                             " is not supported (this gspo reads version " + std::to_string(kContractVersion) + ")");
  }
  m.architecture = field<std::string>(j, "architecture", file, false, "unknown");
  m.vocab_size = field<int64_t>(j, "vocab_size", file, true, 0);
  m.max_seq_len = field<int64_t>(j, "max_seq_len", file, true, 0);
  m.bos_token_id = field<int64_t>(j, "bos_token_id", file, false, -1);
  m.eos_token_id = field<int64_t>(j, "eos_token_id", file, true, -1);
  m.pad_token_id = field<int64_t>(j, "pad_token_id", file, false, m.eos_token_id);
  m.num_layers = field<int64_t>(j, "num_layers", file, false, 0);
  m.hidden_size = field<int64_t>(j, "hidden_size", file, false, 0);
  m.num_heads = field<int64_t>(j, "num_heads", file, false, 0);
  m.num_kv_heads = field<int64_t>(j, "num_kv_heads", file, false, 0);
  m.head_dim = field<int64_t>(j, "head_dim", file, false, 0);
  m.dtype = field<std::string>(j, "dtype", file, false, "float32");
  m.moe_capture_rows = field<int64_t>(j, "moe_capture_rows", file, false, 0);
  if (m.moe_capture_rows < 0)
    throw ModelContractError(file + ": manifest moe_capture_rows must be >= 0 (got " +
                             std::to_string(m.moe_capture_rows) + ")");
  auto check_id = [&](int64_t id, const char* name, bool required) {
    if ((required || id >= 0) && (id < 0 || id >= m.vocab_size))
      throw ModelContractError(file + ": manifest " + name + " " + std::to_string(id) + " is outside the vocabulary [0, " +
                               std::to_string(m.vocab_size) + ")");
  };
  if (m.vocab_size <= 0) throw ModelContractError(file + ": manifest vocab_size must be > 0");
  if (m.max_seq_len <= 1) throw ModelContractError(file + ": manifest max_seq_len must be > 1");
  check_id(m.eos_token_id, "eos_token_id", true);
  m.eos_token_ids = field<std::vector<int64_t>>(j, "eos_token_ids", file, false, {m.eos_token_id});
  if (m.eos_token_ids.empty()) throw ModelContractError(file + ": manifest eos_token_ids is empty");
  for (const int64_t id : m.eos_token_ids) check_id(id, "eos_token_ids entry", true);
  if (m.eos_token_ids.front() != m.eos_token_id)
    throw ModelContractError(file + ": manifest eos_token_ids must start with eos_token_id " +
                             std::to_string(m.eos_token_id) + " (got " + j.at("eos_token_ids").dump() + ")");
  check_id(m.bos_token_id, "bos_token_id", false);
  check_id(m.pad_token_id, "pad_token_id", false);
  return m;
}

bool is_eos(const Manifest& m, int64_t id) {
  for (const int64_t e : m.eos_token_ids)
    if (e == id) return true;
  return false;
}

}  // namespace gspo::model
