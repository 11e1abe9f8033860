// What a memory plan is made of (memory.h computes it): its inputs beside the config, its terms, phases and the
// whole plan. Apart from memory.h so the pieces that build and print a plan (sizes.h, plan_text.h) need not include it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/plan/model_shape.h"

namespace gspo::plan {

// A model-backed reward's shape (a reward model's: read_reward_model_shape; a judge's: a policy export's or a
// config.json's), for the scorer of `kind` (reward/scorers/scorer_table.h has its row).
struct ScorerShape {
  config::RewardKind kind;
  ModelShape shape;
};

struct PlanInputs {
  int64_t world_size = 1;       // ranks of the job (with distributed.rollout_ranks K: K of them only sample)
  int64_t prompt_tokens = 512;  // the longest prompt of a step, in tokens (the config cannot say; a flag does)
  double runtime_mb = 0;        // the process's own memory before any model: LibTorch, the binary (measured)
  double device_gb = 80;        // what one rank may use, for the fit verdict
  std::vector<ScorerShape> scorers;  // the model-backed rewards in use (reward::model_scorers' order), with their shapes
  std::optional<ModelShape> teacher;  // distill.teacher's shape, when set
};

struct Term {
  std::string name;     // e.g. "weights"
  double bytes = 0;
  std::string formula;  // how it was computed, with the numbers
};

struct PhasePlan {
  std::string name;          // load (ZeRO-3 on the CPU), rollout, logprobs, update
  std::vector<Term> terms;   // what this phase adds to the resident state (load: to the runtime alone)
  double peak_bytes = 0;     // resident (load: runtime) + the phase's terms
  bool on_resident = true;   // false for load: before the resident state exists
};

struct MemoryPlan {
  ModelShape shape;
  int64_t parameters = 0;
  int64_t rows_per_rank = 0;       // rollout rows this rank samples and trains on
  int64_t micro_rows = 0;          // rows per forward/backward
  int64_t micro_tokens = 0;        // padded tokens per forward/backward (micro_rows x columns; shared prompts: packed)
  int64_t columns = 0;             // prompt_tokens + max_new_tokens
  int64_t kv_rows = 0;             // rows of KV cache the rollout holds at once
  std::vector<Term> resident;      // held through every phase of a step (after the first)
  double resident_bytes = 0;
  std::vector<PhasePlan> phases;   // rollout, logprobs, update
  std::string peak_phase;
  double peak_bytes = 0;
  std::vector<Term> not_built;     // what a combination gspo does not offer would save (expert parallelism with ZeRO-3)
  // distributed.optimizer_offload: what a rank keeps in host memory instead (the moments, ZeRO-3's masters, the host
  // step's staging), and the bytes its optimizer step moves each way (a ZeRO-3 layer gather's master copy besides).
  std::vector<Term> host;
  double host_bytes = 0;
  double d2h_bytes = 0, h2d_bytes = 0;
  std::vector<std::string> notes;  // assumptions the figures rest on
};

}  // namespace gspo::plan
