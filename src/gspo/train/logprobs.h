// Log-probabilities of response tokens under a policy, from one full forward over prompt + response.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "gspo/train/layer_runner.h"
#include "gspo/train/routing.h"

namespace gspo::model { class Policy; }

namespace gspo::train {

// Whether response_logprobs also computes the per-token entropy (one more pass over the logits).
enum class Entropy { kSkip, kCompute };

struct TokenLogprobs {
  at::Tensor logprobs;    // [n, R] float32, differentiable when grad mode is on
  at::Tensor entropy;     // [n, R] float32, detached; undefined unless Entropy::kCompute
  at::Tensor extra;       // [n, R, k] float32: the log-probs of response_logprobs' extra_targets (else undefined),
                          // differentiable as logprobs, from the same head pass
  int64_t host_reads = 0;  // device-to-host reads the pass made (the per-layer pass: its width and token count)
};

// What the caller knows on the host of the rows it passes (a micro-batch sliced on the host), so the per-layer pass
// needs no device read for the shapes it builds. Empty: the pass reads them from the device (2 reads).
struct KnownShape {
  int64_t width = 0;      // the most real tokens (prompt + response) of a row; 0 = unknown
  at::Tensor real_index;  // [N, 2] int64 on the model's device: (row, j) of every real response token, row-major
  // Per row (the per-layer pass only): rows with equal ids share their prompt, which runs once for them
  // (shared_prefix.h: the same log-probs; one more device read, the prompts' check, and 2 without prompt_len and
  // response_len); empty: every row runs its own.
  std::vector<int64_t> prompt_group;
  // With prompt_group: each row's real prompt and response tokens (the pass then reads neither from the device).
  std::vector<int64_t> prompt_len, response_len;
  // With prompt_group: the ids name whole groups; each runs its prompt once through Policy::shared_layer when the
  // policy and the runner have it (LayerRunner::runs_shared), else packed as share_groups decides. false: each id
  // is one pack already.
  bool whole_groups = false;
};

// How response_logprobs runs a model. Models without the per-layer methods always take the forward path.
struct LogprobPass {
  bool layers = true;        // drive the per-layer methods (rows right-aligned: causal attention, no mask)
  bool checkpoint = false;   // layers, grad on: each decoder layer keeps only its input, recomputed in backward
  bool chunked_head = true;  // layers: log-probs from hidden states a chunk at a time, no [N, V] logits
  // How the per-layer pass runs each decoder layer (layer_runner.h); null: the policy's own layers. The step's
  // (step_experts.h) runs MoE layers across an expert-parallel group: collective, and needs `layers`.
  LayerRunner* runner = nullptr;
};

// ids/mask: [n, P + R] in the rollout layout (left-padded prompt of P columns, right-padded response of R).
// Log-probs are taken at `temperature` (logits / temperature), the temperature the sampler used, in float32
// whatever the logits' dtype, `chunk_tokens` positions at a time (0 = all at once). On the per-layer path the head
// runs over the real response tokens only (with chunked_head a chunk at a time, forward and backward, so no [N, V]
// tensor exists: head_logprobs.h) and padded response positions get log-prob and entropy 0; on the forward path see
// token_logprobs (padded positions then hold unspecified finite values). Callers mask padded positions either way.
// `routes` (a policy with has_routing(); forces the per-layer path): MoE layers run with routes.replay's experts and/or
// record the experts they used into routes.record (train/routing.h). `extra_targets` [n, R, k] int64 (undefined:
// none): k more token ids per response position whose log-probs come back in TokenLogprobs::extra (distillation's
// divergence over the teacher's top-k), gathered from the same logits (padded positions: any id, value unspecified).
TokenLogprobs response_logprobs(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask,
                                int64_t prompt_len, double temperature, Entropy entropy,
                                int64_t chunk_tokens = 1024, LogprobPass pass = {}, RouteIO routes = {},
                                const KnownShape& known = {}, const at::Tensor& extra_targets = {});

// A frozen model's view of each response position: the log-prob of the sampled token and its k most likely tokens.
struct TopkLogprobs {
  at::Tensor logprobs;  // [n, R] float32, log_softmax(logits / T) of the response tokens
  at::Tensor top_lp;    // [n, R, k] float32, the k largest log-probs at each position, descending
  at::Tensor top_ids;   // [n, R, k] int64, their token ids (padded positions: 0 and id 0)
};

// No gradient. As response_logprobs (same layout, temperature, passes; no routes), plus each position's top k
// (k clamped to the vocabulary), the head run `chunk_tokens` positions at a time: the [N, V] logits never whole.
TopkLogprobs response_topk(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t prompt_len,
                           double temperature, int64_t k, int64_t chunk_tokens = 1024, LogprobPass pass = {},
                           const KnownShape& known = {});

// The experts every MoE layer routes each token of ids/mask [n, P + R] to (rollout layout), in the per-layer pass's
// layout: the decoder layers only (no head), no gradient. Needs policy.has_routing(). `experts`: as LogprobPass's.
RouteRecord route_experts(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t prompt_len,
                          const KnownShape& known = {}, LayerRunner* runner = nullptr);

// pred [n, R, V] (float32, bfloat16 or half; may be a strided view), targets [n, R] (or [n, R, K]) int64 ->
// log_softmax(pred / temperature)[target] as [n, R] (or [n, R, K]) float32, differentiable with respect to pred. Computed a chunk
// of about `chunk_tokens` positions at a time, forward and backward (which recomputes the chunk's softmax), so
// memory holds one chunk's float32 copy and an [n, R] log-sum-exp, never a float32 [n, R, V] tensor.
at::Tensor token_logprobs(const at::Tensor& pred, const at::Tensor& targets, double temperature, int64_t chunk_tokens);

// Entropy of softmax(pred / temperature) per position, [n, R] float32, no gradient; chunked the same way.
at::Tensor token_entropy(const at::Tensor& pred, double temperature, int64_t chunk_tokens);

}  // namespace gspo::train
