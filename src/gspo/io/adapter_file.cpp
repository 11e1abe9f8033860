#include "gspo/io/adapter_file.h"

#include <torch/torch.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"

namespace gspo::io {
namespace {

std::string json_file(const std::string& dir) { return dir + "/adapter.json"; }

// Fingerprints of the same weights read on other thread counts differ in the last bits of the double sums.
bool same_fingerprint(const std::array<double, 2>& a, const std::array<double, 2>& b) {
  const double scale = 1 + std::abs(a[0]) + std::abs(a[1]);
  return std::abs(a[0] - b[0]) <= 1e-9 * scale && std::abs(a[1] - b[1]) <= 1e-9 * scale;
}

}  // namespace

void save_adapters(const std::string& dir, const model::LoraAdapters& lora, AdapterMeta meta) {
  meta.names.clear();
  for (const auto& a : lora.adapters()) meta.names.push_back(a.name);
  std::vector<at::Tensor> tensors;
  for (const auto& t : lora.parameters()) tensors.push_back(t.detach().to(torch::kCPU));
  save_tensors(adapter_file(dir), tensors, "LoRA adapters");
  const nlohmann::ordered_json j{{"rank", meta.rank},
                                 {"alpha", meta.alpha},
                                 {"targets", meta.targets},
                                 {"experts", meta.experts},
                                 {"base_path", meta.base_path},
                                 {"base_fingerprint", meta.base_fingerprint},
                                 {"names", meta.names}};
  core::atomic_write(json_file(dir), j.dump(1) + "\n");
}

AdapterMeta read_adapter_meta(const std::string& dir) {
  const std::string file = json_file(dir);
  if (!core::exists(file)) throw IoError("'" + file + "' is missing: '" + dir + "' holds no LoRA adapters");
  AdapterMeta m;
  const char* key = "";
  try {
    const auto j = nlohmann::json::parse(core::read_text(file));
    key = "rank", m.rank = j.at(key).get<int64_t>();
    key = "alpha", m.alpha = j.at(key).get<double>();
    key = "targets", m.targets = j.at(key).get<std::vector<std::string>>();
    key = "experts", m.experts = j.at(key).get<bool>();
    key = "names", m.names = j.at(key).get<std::vector<std::string>>();
    key = "base_path", m.base_path = j.at(key).get<std::string>();
    key = "base_fingerprint", m.base_fingerprint = j.at(key).get<std::array<double, 2>>();
  } catch (const nlohmann::json::exception& e) {
    throw IoError("'" + file + "'" + (*key ? std::string(", key '") + key + "'" : "") + ": " + e.what());
  }
  if (m.rank < 1 || !(m.alpha > 0) || m.names.empty())
    throw IoError("'" + file + "': rank " + std::to_string(m.rank) + ", alpha " + std::to_string(m.alpha) + ", " +
                  std::to_string(m.names.size()) + " adapters: not a usable adapter set");
  return m;
}

void load_adapters(const std::string& dir, model::LoraAdapters& lora) {
  const auto meta = read_adapter_meta(dir);
  const auto& mine = lora.adapters();
  const std::string where = "'" + dir + "' (adapter.json)";
  if (meta.names.size() != mine.size())
    throw ConfigError(where + " holds " + std::to_string(meta.names.size()) + " adapters, this run makes " +
                      std::to_string(mine.size()) + " (model.lora_targets / model.lora_experts must be as trained)");
  for (size_t i = 0; i < mine.size(); ++i)
    if (meta.names[i] != mine[i].name)
      throw ConfigError(where + ": adapter " + std::to_string(i) + " is for '" + meta.names[i] + "', this run's is for '" +
                        mine[i].name + "'");
  const auto tensors = load_tensors(adapter_file(dir), "LoRA adapters");
  auto params = lora.parameters();
  if (tensors.size() != params.size())
    throw IoError("'" + adapter_file(dir) + "' holds " + std::to_string(tensors.size()) + " tensors, adapter.json names " +
                  std::to_string(params.size() / 2) + " adapters (A and B each)");
  torch::NoGradGuard g;
  for (size_t i = 0; i < tensors.size(); ++i) {  // what the file holds, before anything is copied
    const std::string what = std::string(i % 2 ? "B" : "A") + " of '" + mine[i / 2].name + "' (tensor " +
                             std::to_string(i) + ")";
    if (tensors[i].dim() != 2 || !tensors[i].is_floating_point())
      throw IoError("'" + adapter_file(dir) + "': " + what + " is a " + c10::str(tensors[i].scalar_type()) + " " +
                    c10::str(tensors[i].sizes()) + " tensor, not a 2-D floating-point one");
    const int64_t r = tensors[i].size(i % 2 ? 1 : 0);  // A [r, in], B [out, r]
    if (r != meta.rank)
      throw IoError("'" + adapter_file(dir) + "': " + what + " has rank " + std::to_string(r) + ", but adapter.json " +
                    "says rank " + std::to_string(meta.rank) + ": the two files do not belong together");
    const int64_t bad = tensors[i].numel() - torch::isfinite(tensors[i]).sum().item<int64_t>();
    if (bad > 0)
      throw IoError("'" + adapter_file(dir) + "': " + what + " holds " + std::to_string(bad) + " non-finite " +
                    (bad == 1 ? "value" : "values") + " (NaN or Inf) of " + std::to_string(tensors[i].numel()) +
                    ": adapters that would turn every output into NaN");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!tensors[i].sizes().equals(params[i].sizes()))
      throw ConfigError(where + ": " + (i % 2 ? "B" : "A") + " of '" + mine[i / 2].name + "' has shape " +
                        c10::str(tensors[i].sizes()) + ", this run's " + c10::str(params[i].sizes()) +
                        " (model.lora_rank must be as trained: " + std::to_string(meta.rank) + ")");
    params[i].copy_(tensors[i]);
  }
}

void check_adapter_base(const std::string& dir, const AdapterMeta& meta, const std::string& base_path,
                        const std::array<double, 2>& fp) {
  if (same_fingerprint(meta.base_fingerprint, fp)) return;
  throw ConfigError("the adapters in '" + dir + "' were trained on base model '" + meta.base_path + "' (weights " +
                    "fingerprint " + c10::str(meta.base_fingerprint[0]) + ", " + c10::str(meta.base_fingerprint[1]) +
                    "), but model.path is '" + base_path + "' with other weights (" + c10::str(fp[0]) + ", " +
                    c10::str(fp[1]) + "): set model.path to the base they were trained on");
}

AdapterMeta merge_adapter_dir(model::Policy& base, const std::string& dir) {
  auto meta = read_adapter_meta(dir);
  check_adapter_base(dir, meta, base.path(), model::weights_fingerprint(base));
  std::vector<bool> trainable;
  for (const auto& p : base.parameters()) trainable.push_back(p.requires_grad());
  {
    model::LoraSpec spec;
    spec.rank = meta.rank;
    spec.alpha = meta.alpha;
    spec.targets = meta.targets;
    spec.experts = meta.experts;
    spec.rank_from = "'" + json_file(dir) + "': rank";
    model::LoraAdapters lora(base, spec);  // (freezes the base: given back below)
    load_adapters(dir, lora);
    lora.merge_into(base);
  }
  auto params = base.parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].requires_grad_(trainable[i]);
  return meta;
}

}  // namespace gspo::io
