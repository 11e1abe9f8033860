// Private to src/gspo/plan (memory.cpp, rollout_plan.cpp, sizes.cpp): the sizes every term of a memory plan is
// computed from, and the pieces the training rank's plan and the rollout rank's share.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/plan/model_shape.h"
#include "gspo/plan/plan_types.h"
#include "gspo/train/engines/engine_choice.h"

namespace gspo::plan {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The sizes every part is computed from.
struct Sizes {
  const ModelShape& shape;
  const config::Config& cfg;
  int64_t W = 1;              // ranks
  double N = 0;               // parameters
  bool bf16 = false;          // model.dtype bfloat16 (float32 masters)
  double b = 4;               // training weights' bytes
  std::string bs = "4";       // b as text
  train::EngineChoice engine;  // the update engine training makes (train/engines/engine_choice.h)
  bool zero1 = false;         // distributed.zero_stage 1
  bool zero3 = false;         // distributed.zero_stage 3
  bool offload = false;       // distributed.optimizer_offload: moments (ZeRO-3: and masters) in host memory
  double N0 = 0;              // ZeRO-3: parameters outside the decoder layers (kept whole)
  double Nl = 0;              // the largest decoder layer's parameters
  double shard = 0;           // parameters whose moments this rank holds
  double mb = 8;              // AdamW moments' bytes a parameter: 8, or 2 + 8 / 256 (optimizer.state_bits 8)
  int64_t P = 0, S = 0, T = 0;  // prompt, response and all columns
  int64_t m = 0;              // rows per micro-batch
  double Tm = 0;              // tokens per micro-batch through the layers (shared prompts: the packed rows')
  double Tu = 0;              // tokens per micro-batch unshared, m x T (the teacher's pass)
  double mask = 0;            // shared prompts: the tree mask's bytes, packs x width^2 (0: unshared)
  bool lora = false;          // model.lora_rank > 0: a frozen base, float32 adapters
  double Na = 0;              // lora: adapter parameters (A and B of every targeted weight)
  double Nt = 0;              // lora: the targeted weights of the widest decoder layer (merged while it runs)
  double Na_largest = 0;      // lora: the largest A or B
  double Nta = 0;             // lora: every targeted weight's elements
  int64_t E = 1;              // distributed.expert_parallel: ranks sharing each MoE layer's experts
  int64_t R = 1;              // W / E: the ranks holding the same experts (their moments are sharded over these)
  double Ne = 0;              // every expert's parameters (all MoE layers)
  double Nk = 0;              // parameters this rank keeps: the rest whole, 1/E of the experts
  double Nle = 0;             // one MoE layer's experts this rank keeps (n/E x 3 x H x I_moe)
  bool chunked = false;       // the head runs chunk by chunk
  double head_tokens = 0;     // positions the head holds at once
  std::string head_what = "";  // head_tokens explained

  // The widest layer by `f` (bytes per token).
  template <class F>
  double widest(F&& f, double bytes) const {
    double w = 0;
    for (int64_t l = 0; l < shape.num_layers; ++l) w = std::max(w, f(shape, l, bytes));
    return w;
  }
};

Sizes sizes_of(const ModelShape& shape, const config::Config& cfg, const PlanInputs& in, int64_t rows_per_rank);

// The ranks that train: W, or W - K beside K rollout ranks (a layout check_world_size accepts).
int64_t training_ranks(const config::Config& cfg, int64_t W);

// A phase of `terms` on top of `resident` bytes.
PhasePlan phase(const std::string& name, std::vector<Term> terms, double resident);

// The rollout: the KV cache (every row at full length, or the budget's rows), the static path's compaction copy,
// the prompts' prefill and the decode step's float32 logits; kv_rows: the rows the cache holds at once.
std::vector<Term> rollout_terms(const Sizes& z, int64_t rows_per_rank, int64_t& kv_rows);

}  // namespace gspo::plan
