// The plain values of a Sampler call (sampler.h): why a row ended, the rows a call continues, the batch it returns
// (its layout: sampler.h), its statistics, and the scheduling rules `gspo plan` models. Apart from the Sampler so the
// decode loop, the slot hook and the written rows (decode_loop.h, slot_hook.h, written.h) can name them without the
// sampler that includes them.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gspo::rollout {

// Why a response ended: EOS, a stop string, the length cap, or (multi-turn tools) a turn with tool calls past
// tools.max_turns. kCarried: it has not ended: the call stopped first (partial rollouts, CallPlan) and a later call
// continues it.
enum class Finish { kEos, kStop, kLength, kMaxTurns, kCarried };
const char* finish_name(Finish f);

// Partial rollouts (docs/async.md): a row as an earlier call left it. Its tokens so far (the policy's own, `own` 1,
// as hooks are not carried), their behaviour log-probs, why it ended (kCarried: it has not, and this call continues
// it from position ids.size(); anything else: it is passed through unchanged) and its noise hash (noise.h row_hash of
// the call that began it), so the continued row draws the uniforms it would have drawn uninterrupted.
// With SamplingParams::record_routes, `routes` holds the experts its earlier calls ran: [prompt + ids.size() - 1,
// MoE layers, top_k] on the host (its prompt's and every token's but the last, which no call has run yet; the
// RolloutBatch::routes type), undefined for a row without tokens. A continued row keeps them for those tokens (what
// its behaviour log-probs came from, as it keeps them); its last token's, and the new tokens', are this call's.
struct RowSoFar {
  std::vector<int64_t> ids;
  std::vector<float> logprobs;
  Finish finish = Finish::kCarried;
  uint64_t noise = 0;
  at::Tensor routes;
};

// What a call continues and when it may stop.
struct CallPlan {
  std::vector<RowSoFar> rows;  // one per row of the call (prompt r / G, sample r % G): a fresh row has no ids
  // > 0: the call stops at the first synchronisation point where at least this many groups have every row ended and
  // no row of a `must_finish` group runs; the rows still running (or still waiting for a slot) end kCarried.
  int64_t stop_after_groups = 0;
  std::vector<uint8_t> must_finish;  // per prompt (empty: none)
};

struct RolloutBatch {
  at::Tensor input_ids;           // [N, P + R] int64; pad id in padded columns
  at::Tensor attention_mask;      // [N, P + R] int64; 1 on real prompt and response tokens
  at::Tensor response_mask;       // [N, R] float32; 1 on response tokens (EOS included), 0 on padding
  at::Tensor loss_mask;           // [N, R] float32; 1 on the tokens the policy is trained on: the ones it wrote. 0 on
                                  // padding and on tokens written into the response for it (a tool's output, once
                                  // tools insert them). Every loss, GSPO's length normalisation, KL, entropy, the
                                  // sampler/trainer mismatch and the length metrics count these
  at::Tensor behaviour_logprobs;  // [N, R] float32; policy log-probs at the sampling temperature before top-k, top-p
                                  // and min_new_tokens masking (what training recomputes), 0 on padding
  at::Tensor routes;              // SamplingParams::record_routes: [N, P + R, MoE layers, top_k] on the host, uint8
                                  // (int16 past 256 experts): the experts each token ran through in the rollout,
                                  // in the rollout layout (rollout/route_store.h); undefined otherwise
  int64_t prompt_len = 0;         // P
  int64_t group_size = 1;         // G
  std::vector<int64_t> response_lengths;      // tokens per response (= response_mask row sums)
  std::vector<Finish> finish;                 // why each response ended
  std::vector<std::vector<int64_t>> response_ids;  // unpadded response tokens per row
  std::vector<std::string> response_text;          // decoded response per row, a final EOS excluded
  int64_t num_rows() const { return static_cast<int64_t>(finish.size()); }
  // Per row: the tokens loss_mask counts (the policy's own tokens of the response).
  std::vector<int64_t> trained_tokens() const;
  // The tokens the policy sampled, every row (trained_tokens summed; a hook's inserted tokens are not generated).
  int64_t generated_tokens() const;
};

struct SamplerStats {
  double seconds = 0;        // wall time of generate()
  int64_t decode_steps = 0;  // decode calls
  int64_t row_steps = 0;     // sum over decode calls of the rows computed (compute actually spent)
  int64_t host_syncs = 0;    // device-to-host reads of the finished flags (at the sync interval)
  int64_t host_transfers = 0;    // every host<->device transfer of the decode loop: flag reads, stop-string token
                                 // reads and flag writes, slot-state uploads; on a CPU the count is the proxy of
                                 // what a GPU would wait for
  int64_t refill_transfers = 0;  // of those, the ones of refills and compactions (new rows' prompts, slots, state)
  int64_t graph_captures = 0;  // CUDA graphs captured for decode (rollout.cuda_graphs; one per cache layout)
  double capture_seconds = 0;  // host time spent capturing them (each capture's warm-up calls included)
  int64_t kv_bytes = 0;        // KV cache allocated (the largest at once)
  int64_t slots = 0;           // rows of KV cache: the pool under a budget, else every row of the call
  int64_t slot_steps = 0;      // sum over sampling steps of the rows of cache allocated (slots; rows dropped count)
  int64_t busy_slot_steps = 0;  // of those, the ones that sampled a token of a running response
  int64_t prefill_tokens = 0;  // prompt columns run through prefill (padding included); each prompt once per call
  int64_t inserted_tokens = 0;     // tokens a slot hook wrote into responses (slot_hook.h)
  int64_t inserted_truncated = 0;  // tokens a hook asked to write past a row's room, dropped
  int64_t continued_rows = 0;      // rows a CallPlan continued (their prompt and response so far prefilled again)
  int64_t continued_tokens = 0;    // of prefill_tokens, the responses so far of continued rows (the cost of recompute)
  int64_t carried_rows = 0;        // rows the call stopped before they ended (Finish::kCarried)
  double slot_util() const { return slot_steps ? static_cast<double>(busy_slot_steps) / slot_steps : 0.0; }
};

// The rules Sampler::generate follows, named so `gspo plan` models the same run (plan/memory.cpp).
// How a call's rows are scheduled: every row at once (no budget, or every row fits it), a slot pool refilled as rows
// end (continuous batching: a model with the slot methods), or static batches of as many rows as the budget holds.
// live_keys (a slot_api 3 model on CUDA, continuous batching on): every row at once goes to a slot pool of them all too,
// where each row's decode reads its own live keys (the static batch attends over every cache column under a mask).
enum class Schedule { kAllRows, kSlotPool, kStaticBatches };
Schedule schedule_for(int64_t rows, int64_t budget_rows, bool continuous, bool has_slots, bool live_keys = false);
// Rows of `row_bytes` of KV cache that fit `budget_bytes`, at most `rows`; 0 when not one does.
int64_t rows_in_budget(int64_t budget_bytes, int64_t row_bytes, int64_t rows);
// Finished rows are dropped from the cache (compaction) once they are at least 1 / kCompactEvery of it, so the
// static path's copy of the running rows is at most (1 - 1 / kCompactEvery) of its cache.
constexpr int64_t kCompactEvery = 4;

}  // namespace gspo::rollout
