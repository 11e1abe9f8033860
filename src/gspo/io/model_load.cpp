#include "gspo/io/model_load.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/io/tensor_checks.h"
#include "gspo/model/policy.h"
#include "gspo/model/reward_model.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::io {
namespace {

// The adapters training starts from (model.adapter with model.lora_rank > 0): trained on this base with this alpha.
void start_adapters(const ModelLoad& what, LoadedModel& out, bool as_saved) {
  const std::string& dir = what.lora_start;
  const auto meta = read_adapter_meta(dir);
  // The fingerprint is of the weights as the file holds them: a copy cast as it loaded (a rollout rank's) leaves the
  // check to the trainers, which load the base uncast.
  if (as_saved) check_adapter_base(dir, meta, what.file, out.base_fingerprint);
  if (meta.alpha != what.lora->alpha)
    throw ConfigError(what.alpha_key + " (" + std::to_string(what.lora->alpha) + ") differs from the alpha the "
                      "adapters in '" + dir + "' were trained with (" + std::to_string(meta.alpha) +
                      "): their update would be scaled differently");
  load_adapters(dir, *out.lora);
  log::info("adapters start from {} (rank {}, alpha {})", dir, meta.rank, meta.alpha);
}

// The chat template an export carries in its manifest's hf_source files (scripts/export_hf.py keeps them verbatim).
void find_chat_template(const std::string& manifest_json, const std::string& file, LoadedModel& out) {
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(manifest_json);
  } catch (const nlohmann::json::exception&) {
    return;  // (parse_manifest already accepted it; nothing more to find)
  }
  if (!manifest.is_object() || !manifest.contains("hf_source") || !manifest["hf_source"].is_object()) return;
  const auto files = manifest["hf_source"].value("files", nlohmann::json::object());
  if (!files.is_object()) return;
  if (files.contains("chat_template.jinja") && files["chat_template.jinja"].is_string()) {
    out.chat_template = files["chat_template.jinja"].get<std::string>();
    out.chat_template_origin = file + " (chat_template.jinja)";
    return;
  }
  if (!files.contains("tokenizer_config.json") || !files["tokenizer_config.json"].is_string()) return;
  const auto tc = nlohmann::json::parse(files["tokenizer_config.json"].get<std::string>(), nullptr, false);
  if (tc.is_discarded() || !tc.is_object() || !tc.contains("chat_template")) return;
  const auto& t = tc["chat_template"];
  out.chat_template_origin = file + " (tokenizer_config.json chat_template)";
  if (t.is_string()) out.chat_template = t.get<std::string>();
  if (t.is_array())  // named templates: [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
    for (const auto& named : t)
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string())
        out.chat_template = named["template"].get<std::string>();
}

}  // namespace

void resolve_chat_template(config::Config& cfg, const LoadedModel& m) {
  auto& d = cfg.data;
  if (d.chat_template == config::ChatTemplate::kNone && !m.chat_template.empty() && d.task == config::Task::kJsonl) {
    log::warn("data.chat_template is none, and {} carries a chat template: prompts go to the model as raw text; set "
              "data.chat_template auto to render them as the model was trained to read them", m.chat_template_origin);
  }
  if (d.chat_template != config::ChatTemplate::kAuto) return;
  if (m.chat_template.empty())
    throw ConfigError(config::set_at(cfg, "data.chat_template") + "data.chat_template auto: '" + m.policy->path() +
                      "' carries no chat template (chat_template.jinja, or tokenizer_config.json's chat_template, which "
                      "scripts/export_hf.py keeps from the model directory); set chatml, qwen2.5, deepseek_r1 or none");
  d.chat_template_source = m.chat_template;
  d.chat_template_origin = m.chat_template_origin;
  const auto token = [&](int64_t id) { return id >= 0 && m.tok ? m.tok->decode({id}, true) : std::string(); };
  d.chat_bos_token = token(m.tok ? m.tok->bos_id() : -1);
  d.chat_eos_token = token(m.policy->manifest().eos_token_id);
}

LoadedModel::LoadedModel() = default;
LoadedModel::LoadedModel(LoadedModel&&) noexcept = default;
LoadedModel& LoadedModel::operator=(LoadedModel&&) noexcept = default;
LoadedModel::~LoadedModel() = default;

namespace {

// A reward model: its own manifest and score method checked as it loads (model::RewardModel::load), then its tokenizer.
LoadedModel load_reward_model(const ModelLoad& what) {
  if (!what.frozen || !what.merge.empty() || what.lora || what.saved_by_run)
    throw std::invalid_argument("load_model: a reward model loads frozen, without adapters");
  LoadedModel out;
  out.reward = std::make_unique<model::RewardModel>(
      model::RewardModel::load(what.file, what.device, what.dtype.value_or(c10::kFloat)));
  if (what.tokenizer) out.tok = tokenizer::from_path_or_spec(what.tokenizer_path, out.reward->tokenizer_json(), what.file);
  find_chat_template(out.reward->manifest().raw_json, what.file, out);
  return out;
}

}  // namespace

LoadedModel load_model(const ModelLoad& what) {
  if (what.head == ModelLoad::Head::kReward) return load_reward_model(what);
  LoadedModel out;
  // A frozen load casts as it loads (one copy in the narrow dtype); with a merge it casts after: the adapters merge
  // into the weights as the file holds them.
  const bool cast_on_load = what.frozen && what.merge.empty() && what.dtype;
  out.policy = std::make_unique<model::Policy>(
      what.frozen ? model::load_frozen(what.file, what.device, cast_on_load ? what.dtype : std::nullopt)
                  : model::Policy::load(what.file, what.device));
  auto& policy = *out.policy;
  if (what.saved_by_run)  // (a damaged policy.pt would train on NaN; adapters are checked as they are read)
    for (const auto& [name, p] : policy.named_parameters()) require_finite(p, what.file, "parameter '" + name + "'");
  if (what.check_contract) out.contract_diff = model::check_contract(policy);
  if (!what.merge.empty()) out.merged = merge_adapter_dir(policy, what.merge);
  if (what.lora && !cast_on_load) out.base_fingerprint = model::weights_fingerprint(policy);
  if (what.dtype && !cast_on_load) policy.set_param_dtype(*what.dtype);
  if (what.lora) {
    out.lora = std::make_unique<model::LoraAdapters>(policy, *what.lora);
    if (!what.lora_start.empty()) start_adapters(what, out, !cast_on_load);
  }
  if (what.tokenizer) out.tok = tokenizer::from_path_or_spec(what.tokenizer_path, policy.tokenizer_json(), what.file);
  find_chat_template(policy.manifest().raw_json, what.file, out);
  return out;
}

}  // namespace gspo::io
