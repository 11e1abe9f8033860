// One path from "which model, and how" to a loaded policy, its adapters and its tokenizer (#68 item 1). Training
// (trainable, from model.path or a checkpoint, gated low-rank adapters started from model.adapter), rollout ranks and
// sampling copies (frozen, in the sampling dtype), the KL reference, `gspo eval`, `gspo generate` and `gspo inspect`
// (frozen, adapters merged), and the scorers that run models (reward/: a judge is a frozen policy, a reward
// model the `ModelLoad::Head::kReward` head) all load through load_model; the recipe is: the file onto the device, a
// run's saved weights checked finite, the contract checked, adapters merged then the cast, or adapters made and
// started, then the tokenizer.
#pragma once
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "gspo/config/options.h"
#include "gspo/io/adapter_file.h"
#include "gspo/model/lora.h"

namespace gspo::model {
class Policy;
class RewardModel;
}  // namespace gspo::model
namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::io {

struct ModelLoad {
  // What the file is: a policy (model::Policy), or a reward model (model::RewardModel: a score head, frozen, in
  // `dtype` (float32 when unset); its own manifest checked instead of the policy contract; no adapters).
  enum class Head { kPolicy, kReward };
  std::string file;                                // the TorchScript export
  Head head = Head::kPolicy;
  c10::Device device = c10::Device(c10::kCPU);    // where its weights go
  bool frozen = false;                            // no gradients ever (model::load_frozen): copies, references, eval
  std::optional<c10::ScalarType> dtype;           // a cast after the merge below (frozen loads)
  std::string merge;                              // adapters merged into the weights (a directory; "" = none)
  bool saved_by_run = false;                      // a checkpoint's policy.pt: NaN or Inf refused, naming the file
  bool check_contract = true;                     // model::check_contract (a copy of a checked file skips it)
  // Gated adapters (model.lora_rank > 0): made on the policy from `lora`; started from `lora_start` when set (its base
  // and alpha checked against this file and lora->alpha; `alpha_key` is how errors name that alpha).
  std::optional<model::LoraSpec> lora;
  std::string lora_start;
  std::string alpha_key = "model.lora_alpha";
  // The tokenizer: `tokenizer_path` (tokenizer.path) when set, else the export's own; none when `tokenizer` is false.
  bool tokenizer = true;
  std::string tokenizer_path;
};

struct LoadedModel {
  LoadedModel();
  LoadedModel(LoadedModel&&) noexcept;
  LoadedModel& operator=(LoadedModel&&) noexcept;
  ~LoadedModel();

  std::unique_ptr<model::Policy> policy;        // held by pointer: the adapters below refer to it
  std::unique_ptr<model::RewardModel> reward;   // Head::kReward: the reward model (then no policy)
  std::unique_ptr<model::LoraAdapters> lora;    // ModelLoad::lora: on the policy, not yet a gate of it
  std::array<double, 2> base_fingerprint{};     // with lora: the base's, as loaded (what checkpoints record)
  std::optional<AdapterMeta> merged;            // ModelLoad::merge: what adapter.json said
  double contract_diff = 0;                     // check_contract's |diff| (0 when not checked)
  // The model's own chat template (its export's chat_template.jinja, else tokenizer_config.json's chat_template, its
  // "default" when a list) and where it came from; empty when it carries none.
  std::string chat_template, chat_template_origin;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

LoadedModel load_model(const ModelLoad& what);

// data.chat_template auto: the loaded model's template (and its bos/eos token strings) into cfg.data, which
// data::format_prompt renders; ConfigError naming data.chat_template when the model carries none. With chat_template
// none and a model that carries one, a warning naming the option (an instruct model trained on raw text).
void resolve_chat_template(config::Config& cfg, const LoadedModel& m);

}  // namespace gspo::io
