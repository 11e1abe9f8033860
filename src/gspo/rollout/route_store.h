// Rollout Routing Replay's record of one sampler call (SamplingParams::record_routes; Policy::record_routes): the
// experts every MoE layer ran each token through, kept on the model's device while the call samples and laid out
// with the batch at its end (RolloutBatch::routes). Private to src/gspo/rollout.
//
// Ids in the narrowest integer type that holds the expert count (uint8 up to 256 experts, int16 beyond): MoE layers
// x top_k bytes a token (x 2 past 256). Qwen3-30B-A3B (48 MoE layers, top-8 of 128): 384 B a token, so a call of 512
// rows of 8k response positions holds 1.6 GB of routes on the device while it samples (beside tens of GB of KV
// cache), and its batch the same on the host.
//
// Where each token's experts come from: a prompt's prefill (once per prompt: its G rows share it, as they share its
// KV columns), the decode step that writes a sampled token into the cache, and an append_slots call that writes a
// tool's output. A row's last token is never run (nothing follows it) and padding is not a token: both hold experts
// 0..top_k-1, which no log-prob reads (causal attention: a position's experts change only its own and later hidden
// states, and the last token's predict nothing).
//
// Partial rollouts: a carried row's routes (RowSoFar::routes, on the host between calls: Qwen3-30B-A3B, 1k-token
// prompt and 8k tokens so far, 3.5 MB a row) are laid over what the call that continues it records.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "gspo/rollout/sampler_types.h"

namespace gspo::rollout {

class RouteStore {
 public:
  // `prompts` of a call, `rows` rows of `span` response positions, `layers` MoE layers of `top_k` experts out of
  // `experts`.
  RouteStore(int64_t prompts, int64_t rows, int64_t span, int64_t layers, int64_t top_k, int64_t experts,
             c10::Device device);
  // Prompt `p`'s experts: tokens [offset, offset + length) of a prefill pass's routes [tokens, L, k].
  void set_prompt(int64_t p, const at::Tensor& pass, int64_t offset, int64_t length);
  // A pass's routes [M, L, k] for response token (rows[m], positions[m]) each (int64 on the device; the discard row
  // `rows` where the pass wrote no token of a row).
  void put(const at::Tensor& rows, const at::Tensor& positions, const at::Tensor& pass);
  // A continued row's (CallPlan) prefill: its response so far, tokens [offset, offset + length) of the pass.
  void set_so_far(int64_t row, const at::Tensor& pass, int64_t offset, int64_t length);
  // Throws std::invalid_argument naming the row and both shapes when a plan's row carries routes this store's model
  // did not record (other MoE layers, top-k, id type or expert ids) or that do not cover its prompt and tokens so far.
  void check_carried(const CallPlan& plan, const std::vector<std::vector<int64_t>>& prompts, int64_t G) const;
  // The call's rows in the rollout layout [rows, P + R, L, k] on the host: prompt p's experts right-aligned in the P
  // prompt columns of its G rows, then response positions [0, R); a plan's row's carried routes laid over its prompt
  // and tokens so far but the last.
  at::Tensor layout(int64_t G, int64_t P, int64_t R, const CallPlan* plan = nullptr) const;

 private:
  at::Tensor filler(at::IntArrayRef shape) const;  // [..., L, k] on the host: experts 0..top_k-1 at every position
  int64_t rows_, span_, layers_, top_k_, experts_;
  c10::ScalarType type_;
  std::vector<at::Tensor> prompt_;  // per prompt: [length, L, k] on the device, undefined until prefilled
  at::Tensor response_;             // [rows + 1, span, L, k]
};

}  // namespace gspo::rollout
