// The sampler's one decode loop (private to src/gspo/rollout). Whatever the schedule, a call's rows decode in a pool
// of KV-cache rows ("slots"); a KvLayout says how the cache is laid out and how rows get into it:
//   batch layout (batch_layout.cpp): every row of a call, or of one static batch, admitted at once, the prompts
//     left-padded to one width and every slot at the same cache column under an attention mask; the pool shrinks by
//     reordering the cache. Any model; no refill.
//   slot layout (slot_layout.cpp): continuous batching for models with the slot methods: each slot at its own
//     column, the slot of an ended row taking the next waiting row (refill), the pool compacted in place.
// The loop is written once for both: the sample/record step, the synchronisation rule, compaction of the slot
// state, the CUDA-graph capture path, pause/resume (slot_hook.h) and the transfer counts.
//
// Slot state lives on the model's device and the steps advance it there; the host keeps mirrors by the same
// arithmetic. The host reads the device only at a synchronisation point (the finished flags, with the progress
// figure, in one copy; and the sampled tokens every step when stop strings must be matched) and writes it only when
// rows are admitted, the pool is compacted or a hook pauses or resumes rows.
#pragma once
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler_types.h"
#include "gspo/rollout/sampling.h"
#include "gspo/rollout/slot_hook.h"
#include "gspo/rollout/stop_matcher.h"
#include "gspo/rollout/written.h"

namespace gspo::model { class Policy; }

namespace gspo::rollout {

class DecodeGraph;
class DecodeLoop;
class RolloutProgress;
class RouteStore;

struct SlotState {
  // On the model's device.
  at::Tensor logits;   // [S, V] float32: what each slot samples from next
  at::Tensor done;     // [S] bool: samples nothing: free, or its row ended (known to the host at the next sync)
  at::Tensor paused;   // [S] bool: running, but neither samples nor advances
  at::Tensor feeding;  // [S] bool: the slot's `next` is a token of its row that its next decode writes
  at::Tensor next;     // [S, 1] int64: the token each slot's next decode writes (pad when none)
  at::Tensor rows;     // [S] int64: call row of each slot (the discard row n when free)
  at::Tensor steps;    // [S] int64: response position each slot samples next
  at::Tensor cols;     // [S] int64: cache column each slot's next decode writes (slot layout)
  at::Tensor inserted;  // [S] int64: tokens a hook wrote into the slot's response (steps - inserted: the model's)
  // Host mirrors.
  std::vector<int64_t> row;   // call row, SlotControl::kFree when none
  std::vector<int64_t> step;  // as steps
  std::vector<int64_t> col;   // as cols
  std::vector<bool> held;     // as paused
  std::vector<int64_t> ins;   // as inserted
  std::vector<bool> turn;     // paused by its turn token (SlotControl::turn_ended), known since the last sync
  int64_t size() const { return static_cast<int64_t>(row.size()); }
  bool running(int64_t s) const { return row[s] != SlotControl::kFree; }
};

struct Admit {
  int64_t slot, row, column;  // column: the cache column the row's first decode writes
  int64_t start = 0;          // the response position it samples first (a continued row's tokens so far)
};

class KvLayout {
 public:
  virtual ~KvLayout() = default;
  virtual int64_t pool() const = 0;      // slots
  virtual bool waiting() const = 0;      // rows not yet admitted
  virtual bool can_pause() const = 0;
  virtual bool can_append() const = 0;
  // Gives free slots to waiting rows (their prompt columns and first logits) through loop.admit().
  virtual void refill(DecodeLoop& loop) = 0;
  // The next decode's inputs: ids [S, 1]; wrote [S] bool, the slots whose id is a real token of their row.
  virtual void stage(const SlotState& s, const at::Tensor& ids, const at::Tensor& wrote) = 0;
  virtual at::Tensor decode() = 0;                    // the staged step, eagerly: [S, V] float32 logits
  virtual bool capture(DecodeGraph& graph) = 0;       // captures the staged step (false: see graph.last_error())
  virtual at::Tensor replay(DecodeGraph& graph) = 0;  // replays it with the staged inputs
  // Writes ids [M, K] (row m's first lengths[m]) into slots[m] from columns[m] (the model's append_slots).
  virtual void append(const at::Tensor& ids, const at::Tensor& lengths, const at::Tensor& slots,
                      const at::Tensor& columns, int64_t width) = 0;
  // Compaction: the order in which the running slots `s` should sit (old slot per new slot, running slots only),
  // then the cache moved to it (`order_dev`: the same on the device).
  virtual std::vector<int64_t> order(const SlotState& s) const = 0;
  virtual void compact(DecodeLoop& loop, const std::vector<int64_t>& order, const at::Tensor& order_dev) = 0;
  // (With CUDA graphs the order ends in free slots, past the running rows, up to the bucket: their contents are not read.)
};

std::unique_ptr<KvLayout> batch_layout(model::Policy& policy, const std::vector<std::vector<int64_t>>& prompts,
                                       int64_t G, int64_t max_new_tokens);
// `slots` cache rows of `columns` columns (>= every prompt + max_new_tokens). With a plan, its ended rows never take
// a slot and its continued rows are prefilled alone, prompt and response so far, and sample from there.
std::unique_ptr<KvLayout> slot_layout(model::Policy& policy, const std::vector<std::vector<int64_t>>& prompts,
                                      int64_t G, int64_t slots, int64_t columns, const CallPlan* plan = nullptr);

// Left-pads prompts into [B, P] ids and mask (on the CPU).
std::pair<at::Tensor, at::Tensor> left_pad(const std::vector<std::vector<int64_t>>& prompts, int64_t P, int64_t pad);

// The pool a compaction leaves `running` rows of `pool` slots: `pool` (no compaction) until at least pool / kCompactEvery
// slots are free; then `running`, or with CUDA graphs (bucketed) the smallest power of two >= running, at most pool, so
// shapes repeat and a call captures at most 1 + log2(pool) graphs.
int64_t compacted_pool(int64_t running, int64_t pool, bool bucketed);

struct LoopContext {
  model::Policy& policy;
  const tokenizer::Tokenizer& tok;
  const SamplingParams& params;
  SamplerStats& stats;
  RolloutProgress& progress;
  std::unique_ptr<DecodeGraph>& graph;  // null: eager decode; reset to null for good when a capture fails
  SlotHook* hook;                       // may be null
  // SamplingParams::record_routes (route_store.h): the policy records its passes' experts (eager, slot layout), the
  // loop and the layout put them here. Null: none.
  RouteStore* routes = nullptr;
};

class DecodeLoop final : public SlotControl {
 public:
  // Rows [0, n) of a call, row r drawing noise row noise.first_row + r; written to out rows [first, first + n).
  // With a plan (rows [0, n) of one call, first 0, groups of G rows): its rows start as it says, each draws its own
  // noise hash, and the loop stops by its rule, the rows not ended then marked Finish::kCarried.
  DecodeLoop(const LoopContext& ctx, KvLayout& layout, const NoiseKey& noise, int64_t n, int64_t first,
             const CallPlan* plan = nullptr, int64_t G = 1);
  void run(SampledRows& out);

  // For layouts.
  model::Policy& policy() { return ctx_.policy; }
  SamplerStats& stats() { return ctx_.stats; }
  RouteStore* routes() { return ctx_.routes; }
  const SlotState& slots() const { return s_; }
  at::Tensor upload(const std::vector<int64_t>& v);  // one host-to-device transfer, counted (as a refill's)
  // Puts rows into free slots with their first logits ([k, V] on the device): state in one upload.
  void admit(const std::vector<Admit>& admits, const at::Tensor& first_logits);

  // SlotControl.
  int64_t num_slots() const override { return s_.size(); }
  int64_t row(int64_t slot) const override { return s_.row.at(slot); }
  int64_t step(int64_t slot) const override { return s_.step.at(slot); }
  bool paused(int64_t slot) const override { return s_.held.at(slot); }
  void pause(int64_t slot) override;
  void resume(int64_t slot) override;
  int64_t append(int64_t slot, const std::vector<int64_t>& tokens) override;
  int64_t room(int64_t slot) const override;
  bool turn_ended(int64_t slot) const override { return s_.turn.at(slot); }
  std::vector<int64_t> tokens(int64_t slot) override;
  void end(int64_t slot, Finish why) override;

 private:
  void sample();
  bool all_capped() const;  // every running, unpaused slot sampled its last token (the host knows without a read)
  int64_t release(bool read);
  int64_t call_hook(int64_t running);  // returns the rows still running after the hook ended some
  void apply_appends();
  void append_rows(const std::vector<std::pair<int64_t, std::vector<int64_t>>>& appends);
  void record_append(const std::vector<std::pair<int64_t, std::vector<int64_t>>>& appends, int64_t K);
  void apply_ends();
  void running_slot(int64_t slot, const char* what) const;  // throws std::logic_error unless it runs a row
  void compact();
  void decode();
  void start_rows();             // the plan's rows so far into Written (and the stop strings' texts)
  void row_ended(int64_t row);   // bookkeeping of ended rows and groups for the plan's stop rule
  bool plan_stops() const;

  LoopContext ctx_;
  KvLayout& layout_;
  const NoiseKey noise_;
  const int64_t n_, first_, R_, span_, pad_, eos_;  // R_: the model's tokens; span_: response positions
  const std::vector<int64_t> eos_ids_;             // every id that ends a row (eos_ first)
  at::Tensor eos_dev_;                             // eos_ids_ on the device when there are several
  const c10::Device dev_;
  const int64_t pool_;  // slots at the start (the cache allocated; slot_steps counts it)
  const int64_t turn_tok_;  // the hook's turn token, -1 for none: rows may then pause on the device between syncs
  const CallPlan* plan_;
  const int64_t G_;
  std::vector<uint64_t> hash_;  // per row (and the discard row n): its noise hash (noise.h)
  at::Tensor hash_dev_;         // the same on the model's device (not on the CPU)
  std::vector<uint8_t> ended_;         // per row: known to the host to have ended
  std::vector<int64_t> group_left_;    // per group: rows not ended
  int64_t groups_done_ = 0, due_left_ = 0;  // groups ended in full; must_finish groups not
  StopMatcher stops_;
  SlotState s_;
  Written written_;  // rows [0, n) and the discard row n
  std::vector<std::string> text_;
  int64_t finished_ = 0;
  bool held_dirty_ = false;  // pause/resume since the last upload of `paused`
  bool any_ins_ = false;     // some slot's row has inserted tokens (the length cap then counts the model's alone)
  std::vector<std::pair<int64_t, std::vector<int64_t>>> appends_;  // (slot, tokens) the hook asked for
  std::vector<std::array<int64_t, 3>> ends_;                       // (slot, row, Finish) the hook ended
};

}  // namespace gspo::rollout
