#include "gspo/io/model_load.h"

#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/io/checkpoint_check.h"
#include "gspo/model/policy.h"
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

}  // namespace

LoadedModel::LoadedModel() = default;
LoadedModel::LoadedModel(LoadedModel&&) noexcept = default;
LoadedModel& LoadedModel::operator=(LoadedModel&&) noexcept = default;
LoadedModel::~LoadedModel() = default;

LoadedModel load_model(const ModelLoad& what) {
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
  return out;
}

}  // namespace gspo::io
