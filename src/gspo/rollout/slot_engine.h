// Continuous batching in a fixed pool of KV-cache rows ("slots"), for models with the slot methods
// (docs/model-contract.md). Private to src/gspo/rollout; Sampler::generate runs it under a budget.
//
// Rows wait in a queue in batch order (prompt 0's G samples, then prompt 1's, ...). Each decode step runs every slot
// at its own column; when rows end (EOS, stop string, length) their slots take the next waiting rows before the next
// step, so the pool stays full until the queue is empty; then the running rows move to the front of the pool as it
// drains, and each step decodes only those (the cache is not reallocated: its memory stays within the budget).
// A prompt is prefilled once: the first of its rows to get a slot is prefilled there (with every other slot its group
// gets in the same refill), a later one copies the prompt's columns from a slot still holding
// them. Admission in queue order guarantees such a slot exists: the last slot given to the prompt keeps its columns
// until a later prompt's row takes that slot, and by then the prompt has no row waiting.
//
// Noise is keyed by (row, response position) as in the static loop, so a row samples the same tokens whichever
// slot and step it runs in, up to float rounding of its logits (a near-tie may flip).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler.h"

namespace gspo::rollout {

class DecodeGraph;
class RolloutProgress;
struct SampledRows;

// Samples G rows per prompt through `slots` cache rows of `columns` columns each (>= every prompt + max_new_tokens);
// row r's response goes to out row r. `graph` (may be null): a CUDA graph of decode_slots, captured once per pool size;
// reset to null for good when a capture fails.
void run_slots(model::Policy& policy, const tokenizer::Tokenizer& tok, const SamplingParams& params, SamplerStats& stats,
               RolloutProgress& progress, std::unique_ptr<DecodeGraph>& graph,
               const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise, int64_t slots,
               int64_t columns, SampledRows& out);

}  // namespace gspo::rollout
