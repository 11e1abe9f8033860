// The model reward (#55; docs/verifiers.md, "Model rewards"): a learned reward model's score of the conversation,
// prompt and response rendered in the reward model's own chat template (reward.model_template) and tokenized by its
// own tokenizer (the policy's and the reward model's differ in practice), scored on the device in passes of at most
// reward.model_batch_tokens (rows sorted by length, right-padded), frozen, in bfloat16 on CUDA by default.
// A row that cannot be scored gets reward 0 and a named failure, counted: text its tokenizer cannot encode, a
// conversation longer than reward.model_max_tokens, a non-finite score. As transformers' apply_chat_template followed
// by tokenization, special-token strings in the rendered text (the response's included) read as those tokens.
#pragma once
#include <c10/core/Device.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "gspo/config/options.h"
#include "gspo/model/reward_model.h"
#include "gspo/reward/scorers/model_scoring.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::reward {

class ModelReward : public ModelScorer {
 public:
  // Loads reward.model_path onto `device` (ModelContractError / IoError / DataError naming the file; a model scoring a
  // probe conversation as nan or inf: ModelContractError). `rows`: the data it will score; when not one row's
  // conversation fits in reward.model_max_tokens (the model's context), ConfigError.
  ModelReward(const config::Config& cfg, c10::Device device, const std::vector<data::Example>& rows = {});
  ~ModelReward() override;

  std::vector<Score> score_batch(const std::vector<std::string>& responses,
                                 const std::vector<const data::Example*>& examples, const std::vector<ToolUse>* uses,
                                 int64_t workers) const override;
  std::string name() const override { return "model"; }
  std::optional<config::RewardKind> kind() const override { return config::RewardKind::kModel; }

  // The conversation as the reward model reads it (the text its tokenizer encodes).
  std::string render(const std::string& response, const data::Example& ex) const;

 private:
  void probe();

  config::ModelRewardOptions opts_;
  config::ScorerOptions scoring_;
  config::DataOptions data_;
  int64_t max_tokens_;
  std::optional<ScorerChat> chat_;  // reward.model_template
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<model::RewardModel> rm_;  // (score() is not const: called under mu_)
};

}  // namespace gspo::reward
