// The scorers that run models on the device, one row each (the reward model, the judge): what the rest of gspo reads
// of a model-backed scorer instead of listing the kinds. make_verifier builds it from its row, scores_with_models asks
// the rows, and `gspo plan` reads its file, its weights and its pass from the row (plan/reward_memory.cpp); the
// step's metrics (reward_model_*) sum every scorer's totals. A new one (a process reward model) is one file in this
// room, its reward.kind choice, and one row here. (Its config keys are a group of config/options_reward.h and their
// rules a function of config/reward_rules.cpp: config comes first, and config::load refuses a bad section before any
// of this runs.)
#pragma once
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/example.h"
#include "gspo/io/model_load.h"
#include "gspo/reward/base/verifier.h"

namespace gspo::reward {

struct ModelScorerRow {
  config::RewardKind kind;                    // reward.kind, or a component's name
  const char* what;                           // "reward model": how plans and messages name it
  const char* path_key;                       // "reward.model_path": the key naming its file
  const std::string& (*path)(const config::RewardOptions&);  // ... and that key's field
  io::ModelLoad::Head head;                   // what the file is: a reward model's score head, or a policy export
  const char* pass_term;                      // gspo plan: the term of one scoring pass ("reward model scoring pass")
  const char* pass_phase;                     // ... and the phase it is ("reward scoring")
  bool pass_holds_kv_cache;                   // a pass fills a KV cache besides a layer's working set (a judge's
                                              // prefill or sampling)
  // Loads it onto `device` for scoring `rows` (refusals as the scorer's constructor says).
  std::unique_ptr<Verifier> (*make)(const config::Config& cfg, c10::Device device,
                                    const std::vector<data::Example>& rows);
};

// Every model-backed scorer, in the order gspo plan lists them.
const std::vector<ModelScorerRow>& model_scorers();

// The row of `kind`, or nullptr for a verifier that runs no model.
const ModelScorerRow* model_scorer(config::RewardKind kind);

}  // namespace gspo::reward
