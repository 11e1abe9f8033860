// What samples and scores, assembled in one place for a trainer rank (trainer.cpp) and a rollout rank
// (rollout_worker.cpp) (#54 item 3): the training rows and their verifier, the policy's low-rank adapters and the copy
// that samples with them merged, the tokenizer, the sampler, the tools and the in-process source. Each role says how
// its policy loads (io::load_model: a trainer's trainable, from a checkpoint, with expert shards; a rollout rank's
// frozen in the rollout's dtype) and calls these in this order: load_rows, take (what io::load_model returned),
// fit_rows, (a trainer's update engine, which casts or shards the base), merged_copy, make_sampler, local_source.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/dataset.h"
#include "gspo/io/model_load.h"
#include "gspo/model/policy.h"
#include "gspo/train/sources/rollout_source.h"
#include "gspo/train/sources/sampling_copy.h"

namespace gspo::model { class LoraAdapters; }
namespace gspo::env { class ToolEnv; }

namespace gspo::train {

struct Assembly {
  Assembly();
  ~Assembly();

  std::unique_ptr<model::Policy> policy;
  std::unique_ptr<model::LoraAdapters> lora;  // model.lora_rank > 0: on the policy (a trainer gates it with them)
  std::optional<SamplingCopy> sampling_copy;  // what samples when the policy cannot (see sampling_copy.h)
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<data::Example> examples;        // the training rows that fit the model
  std::unique_ptr<reward::Verifier> verifier;
  std::unique_ptr<rollout::Sampler> sampler;
  std::unique_ptr<env::ToolEnv> tools;        // tools.list set: multi-turn episodes

  model::Policy& sampling_model() { return sampling_copy ? sampling_copy->model() : *policy; }

  // train.threads; the rows of data.path and their verifier (fit to the model later: fit_rows; a model reward on
  // `device`); then the global torch seed train.seed.
  std::vector<data::Example> load_rows(const config::Config& cfg, c10::Device device);
  // The policy, its adapters and its tokenizer, as io::load_model made them.
  void take(io::LoadedModel loaded);
  // How every role loads model.path: onto `device`, the tokenizer from tokenizer.path or the export; with
  // model.lora_rank > 0 adapters made from train.seed (started from model.adapter when `start`), else model.adapter
  // merged into the weights when `start`.
  static io::ModelLoad model_load(const config::Config& cfg, c10::Device device, bool start);
  // The rows whose prompts leave room for rollout.max_new_tokens (`loud`: say what was dropped).
  void fit_rows(std::vector<data::Example> rows, const config::Config& cfg, bool loud, int64_t& dropped);
  // The LoRA recipe: the base loaded again on the host in the sampling dtype, sharing the policy's untargeted tensors,
  // its adapted weights moved to `device`, where the adapters are merged into them before each use. Returns the
  // tensors shared.
  int64_t merged_copy(const config::Config& cfg, c10::Device device);
  // The sampler and tools over sampling_model() (`progress`: the live rollout line).
  void make_sampler(const config::Config& cfg, bool progress);
  // The in-process source: partial rollouts (async.partial_rollout) or one sampler call a round.
  std::unique_ptr<RolloutSource> local_source(const config::Config& cfg, parallel::Comm& comm);
};

}  // namespace gspo::train
