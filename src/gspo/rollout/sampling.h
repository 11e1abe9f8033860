// Next-token choice from a batch of logits: temperature, top-k, top-p, greedy, and the behaviour log-prob.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/choices.h"

namespace gspo::rollout {

struct SamplingParams {
  double temperature = 1.0;          // 0 = greedy argmax
  double top_p = 1.0;                // nucleus mass kept; 1 disables
  int64_t top_k = 0;                 // 0 disables
  int64_t max_new_tokens = 16;       // response length cap (the model's own tokens)
  std::vector<std::string> stop;     // stop strings (matched on the response bytes)
  int64_t min_new_tokens = 0;        // EOS never drawn and stop strings not checked before this many tokens; 0 = off
  int64_t vocab_limit = 0;           // ids >= this are never chosen (a model vocab padded past the tokenizer's); 0 = none
  int64_t host_sync_every = 0;       // decode steps between host reads of the finished flags; 0 = 1 on CPU, 8 on GPU
  // CUDA: replay decode steps as CUDA graphs (decode_graph.h); auto and true alike, true warns when the model cannot;
  // no effect on CPU
  config::CudaGraphs cuda_graphs = config::CudaGraphs::kOff;
  // KV-cache budget (sampler.h): 0 = every row of a call at once, at full length; > 0 = a pool of as many rows of
  // cache as fit in this many bytes, refilled as rows finish (continuous batching, models with slot methods) or filled
  // by static batches of that many rows (continuous = false, or a model without slot methods).
  int64_t kv_cache_bytes = 0;
  double kv_cache_fraction = 0;      // CUDA: the budget as this fraction of the device memory available at each call
  bool continuous = true;
  std::string kv_budget_key = "rollout.kv_cache_mb";  // the config key named in budget errors
  bool progress = false;             // a live line on stderr (finished responses, tokens/s) when it is a terminal
  int64_t insert_capacity = 0;       // response positions per row a slot hook may fill with tokens it writes (tool
                                     // output, slot_hook.h), besides max_new_tokens; cache and buffers grow by it
  // MoE (algorithm.routing_replay rollout): RolloutBatch::routes, the experts of every token the call ran
  // (route_store.h); the call then runs in a slot pool, eagerly, its slot passes one layer at a time
  // (Policy::record_routes).
  bool record_routes = false;
};

// The temperature the policy's log-probs are taken at: `temperature`, or 1 when greedy. Training computes
// pi_theta and pi_old at this same temperature so the ratio compares like with like.
double logprob_temperature(double temperature);

// logits [N, V] float32 -> logits with every token outside top-k / top-p set to -inf (at least one kept).
// Applied after dividing by the temperature, in that order (top-k then top-p), as Hugging Face does.
at::Tensor filter_logits(const at::Tensor& scaled_logits, int64_t top_k, double top_p);

struct Draw {
  at::Tensor tokens;    // [N] int64
  at::Tensor logprobs;  // [N] float32: log_softmax(logits / logprob_temperature)[token], unfiltered and unmasked
};

// Chooses one token per row by inverting the (filtered) CDF at `uniforms` ([N] float64 in [0, 1), any device; see
// noise.h): row i takes the first token whose cumulative probability exceeds uniforms[i] * total. A token of
// probability zero is never chosen. Same uniforms and logits -> same tokens, whatever the other rows are.
// `banned` >= 0 is a token id no row may choose at this step (EOS before min_new_tokens): its logit is set to -inf
// before top-k/top-p (as transformers' min_new_tokens processor runs before its warpers), which costs one [N, V]
// copy; the recorded log-probs still come from the unmasked distribution, like top-k/top-p's.
// `ban_rows` (bool [N], optional) limits the ban to the rows where it is true (rows at different response lengths).
Draw sample_next(const at::Tensor& logits, const SamplingParams& p, const at::Tensor& uniforms, int64_t banned = -1,
                 const at::Tensor& ban_rows = {});
// The same with several banned ids (every EOS id of a model with more than one); ids outside the choosable vocabulary
// are ignored. One [N, V] copy however many.
Draw sample_next(const at::Tensor& logits, const SamplingParams& p, const at::Tensor& uniforms,
                 const std::vector<int64_t>& banned, const at::Tensor& ban_rows);

}  // namespace gspo::rollout
