// What `gspo eval -m PATH` and `gspo generate -m PATH` may name: a TorchScript model file, or a training run's
// output: a checkpoint directory, or a run directory (its newest complete checkpoint). A checkpoint of the whole
// policy is its policy.pt; a checkpoint of low-rank adapters is its base (adapter.json's base_path) with the
// directory as the adapters to merge. So `gspo eval -m runs/x` evaluates what run x last saved.
#pragma once
#include <string>

namespace gspo::io {

struct ModelRef {
  std::string model;    // the model file to load
  std::string adapter;  // a checkpoint of adapters to merge into it ("" when none)
  std::string from;     // the checkpoint directory it came from ("" for a plain file)
};

// `adapter`: adapters given besides (--adapter, model.adapter; "" = none), kept for a model file or a checkpoint of
// the whole policy. IoError naming `path` when a directory holds neither a checkpoint nor checkpoints/ with a complete
// one, or the checkpoint has neither policy.pt nor adapter.pt; ConfigError when it is a checkpoint of adapters and
// other adapters are given too.
ModelRef resolve_model_ref(const std::string& path, const std::string& adapter = "");

}  // namespace gspo::io
