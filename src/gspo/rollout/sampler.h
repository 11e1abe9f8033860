// Batched generation of G responses for each of B prompts through the policy's KV cache.
//
// Layout of a RolloutBatch (shared with training, so recomputed log-probs line up with the sampler's):
// row i = prompt i / G, sample i % G; columns [0, P) hold the prompt left-padded to the longest prompt P,
// columns [P, P + R) the response right-padded to the longest response R.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler_types.h"
#include "gspo/rollout/sampling.h"

namespace gspo::model { class Policy; }
namespace gspo::tokenizer { class Tokenizer; }

namespace gspo::rollout {

class DecodeGraph;
class RolloutProgress;
struct SampledRows;  // written.h
class SlotHook;      // slot_hook.h

class RouteStore;

class Sampler {
 public:
  Sampler(model::Policy& policy, const tokenizer::Tokenizer& tok, SamplingParams params);
  ~Sampler();

  // Samples `group_size` responses for every prompt (token ids, BOS included if wanted). Throws DataError for an
  // empty prompt or one that with max_new_tokens exceeds the model's max_seq_len. Row r (prompt r / G, sample
  // r % G) draws its tokens from noise row noise.first_row + r (noise.h). With params.min_new_tokens = k, no
  // response ends before k tokens (EOS is first possible as token k + 1; a stop string may end it at token k).
  //
  // KV-cache budget (params.kv_cache_mb > 0): the cache holds at most as many rows of P + max_new_tokens columns as
  // fit in the budget (ConfigError naming params.kv_budget_key when not even one does). When every row fits, the call
  // runs as without a budget. Otherwise rows wait in a queue (prompt by prompt) and, with a model that has the slot
  // methods, take the slot of a finished row in the same decode loop, the prompt's cache prefilled once and shared
  // by its samples (decode_loop.h, the slot layout); without them (or with params.continuous false) the rows run in static batches of
  // as many rows as the budget holds. The responses are the same either way up to near-ties (noise is keyed by row
  // and position, never by schedule).
  RolloutBatch generate(const std::vector<std::vector<int64_t>>& prompts, int64_t group_size, const NoiseKey& noise);
  // Partial rollouts: the same, continuing the rows of `plan` and stopping as it says (rows of fresh calls draw
  // `noise`; plan rows their own hashes). Runs in the slot layout (continuous batching: ConfigError for a model
  // without the slot methods), the KV budget as above; a continued row is prefilled alone (prompt and response so
  // far; its cache is recomputed, not kept between calls). A call stopped early and the call that continues its rows
  // sample what one uninterrupted call samples (up to near-ties). Not with a slot hook.
  RolloutBatch generate(const std::vector<std::vector<int64_t>>& prompts, int64_t group_size, const NoiseKey& noise,
                        const CallPlan& plan);

  // A hook called at each synchronisation point of the decode loop (slot_hook.h); null for none. Not owned.
  void set_hook(SlotHook* hook) { hook_ = hook; }

  const SamplerStats& last_stats() const { return stats_; }
  model::Policy& policy() const { return policy_; }
  const SamplingParams& params() const { return params_; }
  // The most rows of a decode step a CUDA graph can capture for `policy`: any number for a dense model; an MoE export
  // routes without reading back to the host only in passes of at most Manifest::moe_capture_rows (0 when it does not
  // say: an older export, whose MoE decode syncs the host; docs/model-contract.md, "Manifest").
  static int64_t capture_rows(const model::Policy& policy);

 private:
  // Every row of `prompts` x G at once in one cache (the batch layout, decode_loop.h), written to out rows
  // [first, first + n).
  void run_static(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise, SampledRows& out,
                  int64_t first, RolloutProgress& progress);
  // Rows of at most `slots` at a time, whole groups where they fit, then the next batch.
  void run_batches(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise, int64_t slots,
                   SampledRows& out, RolloutProgress& progress);
  // Continuous batching in `slots` cache rows of `columns` columns (the slot layout).
  void run_slots(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise, int64_t slots,
                 int64_t columns, SampledRows& out, RolloutProgress& progress, const CallPlan* plan = nullptr,
                 RouteStore* routes = nullptr);
  RolloutBatch run(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise,
                   const CallPlan* plan);
  // How many rows of `columns` cache columns fit the budget (`rows` when there is none, at most `rows`).
  int64_t budget_rows(int64_t rows, int64_t columns);

  model::Policy& policy_;
  const tokenizer::Tokenizer& tok_;
  SamplingParams params_;
  SamplerStats stats_;
  std::unique_ptr<DecodeGraph> graph_;  // set when params.cuda_graphs and the policy supports it
  std::unique_ptr<DecodeGraph> slot_graph_;  // the same for continuous batching (decode_slots)
  int64_t graph_rows_ = 0;  // the most rows a captured decode step may hold (capture_rows below)
  SlotHook* hook_ = nullptr;
};

}  // namespace gspo::rollout
