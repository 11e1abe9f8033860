// What a training process assembles, built by one function for a trainer rank (trainer.cpp) and a rollout rank
// (rollout_worker.cpp) alike (#68 item 2): the training rows and their verifier, the policy with its low-rank adapters
// and the copy that samples with them merged, the tokenizer, the sampler and tools, and for a trainer its update
// engine, KL reference and expert shards. The two roles differ only by the `Role` they pass: a trainer's policy is
// trainable, started from a checkpoint when resuming, and comes with an engine; a rollout rank's is frozen in the
// sampling dtype. Trainer::Impl and RolloutWorker::Impl hold an Assembly; validation and the held-out evaluation read
// the verifier and device from it (one scorer a process, on the training device).
#pragma once
#include <c10/core/Device.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/example.h"
#include "gspo/io/model_load.h"
#include "gspo/model/policy.h"
#include "gspo/train/engines/update_engine.h"
#include "gspo/train/setup/fault.h"
#include "gspo/train/sources/rollout_source.h"
#include "gspo/train/sources/sampling_copy.h"

namespace gspo::model { class LoraAdapters; }
namespace gspo::env { class ToolEnv; }

namespace gspo::train {

struct ExpertParallel;
class TeacherPrompts;

// Who assembles, as data.
struct Role {
  // A trainer: a trainable policy (from `checkpoint` when resuming), its update engine, the KL reference, expert
  // shards, the bf16 sampling copy. Else a rollout rank: the policy frozen in the sampling dtype, started where the
  // trainers start, and nothing that updates.
  bool trains = true;
  std::optional<std::string> checkpoint;  // a trainer resuming: the checkpoint directory
  bool main = true;       // says what start-up drops and warns of (rank 0 of its group)
  bool progress = false;  // the live rollout line
  static Role trainer(std::optional<std::string> checkpoint, bool main, bool progress);
  static Role rollout_rank(bool main, bool progress);
};

struct Assembly {
  // The models load onto `device` and the processes' collectives run over `comm` (a trainer's group, or the rollout
  // ranks'). `cfg` is the process's copy: the loaded model resolves data.chat_template auto in it.
  Assembly(config::Config& cfg, const Role& role, c10::Device device, parallel::Comm& comm);
  ~Assembly();
  Assembly(const Assembly&) = delete;
  Assembly& operator=(const Assembly&) = delete;

  c10::Device device;                         // where the policy and the model-backed scorers run
  std::unique_ptr<model::Policy> policy;
  std::unique_ptr<model::LoraAdapters> lora;  // model.lora_rank > 0: on the policy (a trainer gates it with them)
  bool lora_gates = false;                    // a trainer's adapters gate its policy (until the destructor)
  std::array<double, 2> base_fingerprint{};   // with lora: model.path's weights as loaded (checkpoints record it)
  std::unique_ptr<ExpertParallel> experts;    // a trainer with distributed.expert_parallel > 1: this rank's experts
  std::unique_ptr<UpdateEngine> engine;       // a trainer's
  std::optional<SamplingCopy> sampling_copy;  // what samples when the policy cannot (see sampling_copy.h)
  std::optional<model::Policy> reference;     // a trainer's KL reference (algorithm.kl_coef > 0, not the base)
  std::optional<model::Policy> teacher;       // a trainer's distillation teacher (distill.teacher; teacher.h)
  std::unique_ptr<TeacherPrompts> teacher_prompts;  // its prompts, when it reads them in its own format
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<data::Example> examples;        // the training rows that fit the model
  std::vector<std::string> sources;            // their data sources, sorted: what each row's source_id counts in
  int64_t dropped_prompts = 0;                // rows left out: prompt + max_new_tokens over max_seq_len
  std::unique_ptr<reward::Verifier> verifier;
  std::unique_ptr<rollout::Sampler> sampler;
  std::unique_ptr<env::ToolEnv> tools;        // tools.list set: multi-turn episodes
  Fault fault;                                // GSPO_FAULT: a bug injected for tests only (fault.h); none normally

  model::Policy& sampling_model() { return sampling_copy ? sampling_copy->model() : *policy; }
  // What validation and the held-out evaluation read: the policy, or with adapters the merged copy (`refresh`: taking
  // the adapters of the last step first).
  model::Policy& eval_model(bool refresh);
  // The in-process source: partial rollouts (async.partial_rollout) or one sampler call a round.
  std::unique_ptr<RolloutSource> local_source(const config::Config& cfg, parallel::Comm& comm);
};

// How every role loads model.path: onto `device`, the tokenizer from tokenizer.path or the export; with
// model.lora_rank > 0 adapters made from train.seed (started from model.adapter when `start`), else model.adapter
// merged into the weights when `start`.
io::ModelLoad policy_load(const config::Config& cfg, c10::Device device, bool start);

}  // namespace gspo::train
