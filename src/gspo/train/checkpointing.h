// Where a run starts (fresh, or from which checkpoint) and the checkpoints it writes: the policy (float32 weights
// even in bf16 training), the update engine's own files, the shuffling generator's state, the progress counters and
// the resolved config.
#pragma once
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/io/adapter_file.h"

namespace gspo::parallel { class Comm; }
namespace gspo::model { class Policy; class LoraAdapters; }

namespace gspo::train {

class UpdateEngine;
struct Progress;

// Training low-rank adapters (model.lora_rank > 0): the adapters and what their checkpoint files say about them
// (io/adapter_file.h); `lora` null otherwise.
struct AdapterState {
  model::LoraAdapters* lora = nullptr;
  io::AdapterMeta meta;
};

// `resume`: "" (fresh; refuses a run directory that already holds a run), "auto" (the newest intact checkpoint
// under train.output_dir, passing over damaged ones with a warning; none: fresh) or a checkpoint directory.
// A checkpoint of adapters (adapter.pt) resumes only with model.lora_rank > 0, a whole policy only with 0 (ConfigError).
std::optional<std::string> find_resume_point(const config::Config& cfg, const std::string& resume);

// Restores the engine's state, the progress and the shuffling generator from `ckpt` (and the adapters, after checking
// that they were trained on this base: ConfigError naming both otherwise); warns, naming the keys, when the config
// differs from the one it was written with. Returns the examples of the groups partial rollouts carried past the
// checkpoint's step (carried.json; empty when it has none).
std::vector<int64_t> restore(const std::string& ckpt, UpdateEngine& engine, Progress& progress,
                             const std::string& config_yaml, const AdapterState& adapters = {});

// Collective: every rank takes part (the weights are checked everywhere, the engine gathers what it saves); rank 0
// writes, then all wait for it so no rank runs ahead of a checkpoint that may still fail. Returns the checkpoint
// directory on rank 0 ("" elsewhere). Throws TrainingError, writing nothing, when a weight is not finite.
// `carried`: the examples of groups partial rollouts carry into the next step (RolloutSource::carried_examples),
// written to carried.json when any. `adapters.lora` set: the checkpoint holds the adapters, not the policy.
std::string save_checkpoint(const config::Config& cfg, const std::string& config_yaml, model::Policy& policy,
                            UpdateEngine& engine, Progress& progress, parallel::Comm& comm,
                            const std::vector<int64_t>& carried = {}, const AdapterState& adapters = {});

}  // namespace gspo::train
