// A learned reward model (#55; docs/model-contract.md, "Reward models"): a Hugging Face *ForSequenceClassification
// (num_labels 1) exported by scripts/export_hf.py --reward to TorchScript with its manifest ("format":
// "gspo-reward-model", reward_api 1) and its own tokenizer. Frozen (no gradient state), in float32 or bfloat16, on one
// device; score() is one prefill-like pass over right-padded rows, read at each row's last real token.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gspo::model {

struct RewardManifest {
  std::string architecture;
  int64_t reward_api = 0;
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;
  int64_t pad_token_id = -1;
  int64_t bos_token_id = -1;
  int64_t eos_token_id = -1;
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  std::string dtype;  // as exported
  std::string raw_json;  // the manifest text as stored (its hf_source files: io::load_model finds the chat template)
};

// Whether the TorchScript file at `path` carries a reward-model manifest (reads the extra files only; false for a
// policy, an unreadable file or no manifest).
bool is_reward_model(const std::string& path);

class RewardModel {
 public:
  // Loads `path` onto `device` in `dtype` (float32 or bfloat16), gradients off. ModelContractError (naming the file)
  // for a file that is not a reward model of a supported reward_api, IoError for an unreadable one.
  static RewardModel load(const std::string& path, c10::Device device, c10::ScalarType dtype);
  RewardModel(RewardModel&&) noexcept;
  RewardModel& operator=(RewardModel&&) noexcept;
  ~RewardModel();

  const RewardManifest& manifest() const;
  const std::string& tokenizer_json() const;  // the tokenizer spec exported with it ("" = none)
  const std::string& path() const;
  c10::Device device() const;
  c10::ScalarType dtype() const;
  int64_t num_parameters() const;
  // ids, mask: int64 [B, T] on device() (mask 1 = a real token, padding on either side). Float32 [B] on device():
  // each row's score at its last real token. No gradient. Not thread-safe.
  at::Tensor score(const at::Tensor& ids, const at::Tensor& mask);

  struct Impl;

 private:
  explicit RewardModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gspo::model
