// The slot layout of the decode loop (decode_loop.h): continuous batching in a fixed pool of KV-cache rows, for models
// with the slot methods (docs/model-contract.md).
//
// Rows wait in a queue in batch order (prompt 0's G samples, then prompt 1's, ...). Each decode step runs every slot
// at its own column (its position); at a synchronisation point the slots of ended rows take the next waiting rows, so
// the pool stays full until the queue is empty; then the running rows move to the front of the pool as it drains, and
// each step decodes only those (the cache is not reallocated: its memory stays within the budget).
// A prompt is prefilled once: the first of its rows to get a slot is prefilled there (with every other slot its group
// gets in the same refill), a later one copies the prompt's columns from a slot still holding them. Admission in queue
// order guarantees such a slot exists: the last slot given to the prompt keeps its columns until a later prompt's row
// takes that slot, and by then the prompt has no row waiting.
// With a CallPlan (partial rollouts), rows it passes through never take a slot, and a continued row is prefilled alone
// in its slot (its prompt and response so far: the cache of an earlier call is recomputed, not kept) and starts
// sampling at its next position; its slot shares no prompt columns.
#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "gspo/model/policy.h"
#include "gspo/rollout/decode_graph.h"
#include "gspo/rollout/decode_loop.h"
#include "gspo/rollout/route_store.h"

namespace gspo::rollout {
namespace {

class SlotLayout final : public KvLayout {
 public:
  SlotLayout(model::Policy& policy, const std::vector<std::vector<int64_t>>& prompts, int64_t G, int64_t slots,
             int64_t columns, const CallPlan* plan)
      : policy_(policy), prompts_(prompts), G_(G), N_(static_cast<int64_t>(prompts.size()) * G), C_(columns),
        pad_(policy.manifest().pad_token_id), slots_(slots), plan_(plan), prefix_(slots, -1), free_col_(columns - 1) {
    cache_ = policy_.init_cache(slots, columns);
    skip_ended();
  }
  int64_t pool() const override { return slots_; }
  bool waiting() const override { return queued_ < N_; }
  bool can_pause() const override { return true; }
  bool can_append() const override { return policy_.has_append(); }
  void refill(DecodeLoop& loop) override;

  void stage(const SlotState& s, const at::Tensor& ids, const at::Tensor&) override {
    width_ = 1;
    for (int64_t i = 0; i < s.size(); ++i)
      if (s.running(i)) width_ = std::max(width_, s.col[i] + 1);
    width_ = std::min(width_, C_);
    // A slot without a running row (free, or ended since the last sync) writes at free_col_: past every prompt while
    // one waits, so the prompt columns a later row copies stay intact.
    cols_ = torch::where(s.done, free_col_, s.cols);
    ids_ = ids;
  }
  // A graph replays every cache column (static shapes); eager decode reads only up to the longest running row.
  at::Tensor decode() override { return policy_.decode_slots(ids_, cache_, cols_, width_); }
  bool capture(DecodeGraph& graph) override { return graph.capture_slots(policy_, cache_, ids_, cols_, C_); }
  at::Tensor replay(DecodeGraph& graph) override { return graph.replay_slots(ids_, cols_); }
  void append(const at::Tensor& ids, const at::Tensor& lengths, const at::Tensor& slots, const at::Tensor& columns,
              int64_t width) override {
    policy_.append_slots(ids, lengths, cache_, slots, columns, std::min(width, C_));
  }

  std::vector<int64_t> order(const SlotState& s) const override;
  void compact(DecodeLoop& loop, const std::vector<int64_t>& order, const at::Tensor& order_dev) override;

 private:
  model::Policy& policy_;
  const std::vector<std::vector<int64_t>>& prompts_;
  // The plan's rows so far: what a row samples first (0 when fresh), and rows it passes through are skipped.
  int64_t start(int64_t row) const { return plan_ ? static_cast<int64_t>(plan_->rows[row].ids.size()) : 0; }
  void skip_ended() {
    while (plan_ && queued_ < N_ && plan_->rows[queued_].finish != Finish::kCarried) ++queued_;
  }

  // refill()'s steps, in order. RefillPlan: the copies, and the prefill entries: a fresh prompt once (fill_prompt its
  // index) or a continued row alone (-1); each admit's own entry (a continued row's; -1 for the others).
  struct RefillPlan {
    std::map<int64_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>> copies;  // prompt -> (from, to) slots
    std::vector<int64_t> fill_prompt, fill_row, fill_slots, fill_source, entry;
  };
  std::vector<Admit> take_free_slots(const SlotState& s);
  RefillPlan plan_refill(const std::vector<Admit>& admits) const;
  at::Tensor prefill(DecodeLoop& loop, const RefillPlan& r);
  std::vector<at::Tensor> place(std::vector<Admit>& admits, const std::vector<int64_t>& entry,
                                const at::Tensor& first_of_fill);
  void release_prompts();

  const int64_t G_, N_, C_, pad_, slots_;
  const CallPlan* plan_;
  at::Tensor cache_;
  std::vector<int64_t> prefix_;                 // the prompt whose columns [0, length) each slot holds, -1 when none
  std::map<int64_t, at::Tensor> first_logits_;  // prompt -> [V] logits of its last token, while rows of it wait
  int64_t queued_ = 0;                          // the next row to get a slot
  int64_t free_col_;  // the column a slot without a running row writes: past every prompt, 0 once none waits
  at::Tensor ids_, cols_;
  int64_t width_ = 1;
};

// Gives free slots to waiting rows in queue order, each row's prompt columns copied from a slot that holds them or
// prefilled (once per prompt, into every slot of it this refill gives out), and its first logits.
void SlotLayout::refill(DecodeLoop& loop) {
  const auto& s = loop.slots();
  loop.stats().kv_bytes = std::max<int64_t>(loop.stats().kv_bytes, cache_.nbytes());
  auto admits = take_free_slots(s);
  if (admits.empty()) return;
  const auto r = plan_refill(admits);
  // Copies read before the prefill below overwrites any slot (a holder may be among the slots being refilled).
  for (const auto& [prompt, c] : r.copies)
    policy_.copy_slots(cache_, loop.upload(c.first), loop.upload(c.second), static_cast<int64_t>(prompts_[prompt].size()));
  at::Tensor first_of_fill;
  if (!r.fill_prompt.empty()) first_of_fill = prefill(loop, r);
  const auto first = place(admits, r.entry, first_of_fill);
  loop.admit(admits, torch::stack(first));
  release_prompts();
}

// The free slots, each given the next waiting row (in queue order, while rows wait).
std::vector<Admit> SlotLayout::take_free_slots(const SlotState& s) {
  std::vector<Admit> admits;
  for (int64_t i = 0; i < s.size() && queued_ < N_; ++i)
    if (!s.running(i)) admits.push_back({i, queued_++, 0}), skip_ended();
  return admits;
}

// Where each admitted row's prompt columns come from: its slot already, a copy from a holder, or a prefill entry.
SlotLayout::RefillPlan SlotLayout::plan_refill(const std::vector<Admit>& admits) const {
  RefillPlan r;
  r.entry.assign(admits.size(), -1);
  for (size_t i = 0; i < admits.size(); ++i) {
    const auto& a = admits[i];
    const int64_t prompt = a.row / G_;
    if (start(a.row) > 0) {
      r.fill_prompt.push_back(-1), r.fill_row.push_back(a.row);
      r.fill_slots.push_back(a.slot), r.fill_source.push_back(static_cast<int64_t>(r.fill_prompt.size()) - 1);
      r.entry[i] = r.fill_source.back();
      continue;
    }
    if (prefix_[a.slot] == prompt) continue;  // the slot already holds this prompt's columns
    auto holder = std::find(prefix_.begin(), prefix_.end(), prompt);
    if (holder != prefix_.end()) {  // in queue order only the refill's first prompt can have been given out before
      r.copies[prompt].first.push_back(holder - prefix_.begin());
      r.copies[prompt].second.push_back(a.slot);
      continue;
    }
    auto same = std::find(r.fill_prompt.begin(), r.fill_prompt.end(), prompt);
    if (same == r.fill_prompt.end()) {
      r.fill_prompt.push_back(prompt), r.fill_row.push_back(a.row);
      same = r.fill_prompt.end() - 1;
    }
    r.fill_slots.push_back(a.slot);
    r.fill_source.push_back(same - r.fill_prompt.begin());
  }
  return r;
}

// Prefills the plan's entries (a continued row with its response so far) in one call: [K, V] logits of each entry's
// last token; a fresh prompt's are kept for its rows to come.
at::Tensor SlotLayout::prefill(DecodeLoop& loop, const RefillPlan& r) {
  const int64_t K = static_cast<int64_t>(r.fill_prompt.size());
  std::vector<std::vector<int64_t>> seqs(K);
  int64_t T = 0;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t row = r.fill_row[k];
    seqs[k] = prompts_[row / G_];
    if (r.fill_prompt[k] < 0) {
      const auto& so_far = plan_->rows[row].ids;
      seqs[k].insert(seqs[k].end(), so_far.begin(), so_far.end());
      loop.stats().continued_rows += 1;
      loop.stats().continued_tokens += static_cast<int64_t>(so_far.size());
    }
    T = std::max<int64_t>(T, seqs[k].size());
  }
  std::vector<int64_t> ids(K * T, pad_), lengths(K);
  for (int64_t k = 0; k < K; ++k) {
    lengths[k] = static_cast<int64_t>(seqs[k].size());
    std::copy(seqs[k].begin(), seqs[k].end(), ids.begin() + k * T);
  }
  auto first_of_fill = policy_.prefill_slots(loop.upload(ids).view({K, T}), loop.upload(lengths), cache_,
                                             loop.upload(r.fill_slots), loop.upload(r.fill_source));
  loop.stats().prefill_tokens += K * T;
  auto* routes = loop.routes();
  for (int64_t k = 0; k < K; ++k) {
    if (r.fill_prompt[k] < 0) {  // (the carried routes are laid over all but its last token's: RouteStore::layout)
      const int64_t row = r.fill_row[k], plen = static_cast<int64_t>(prompts_[row / G_].size());
      if (routes) routes->set_so_far(row, policy_.pass_routes(), k * T + plen, lengths[k] - plen);
      continue;
    }
    first_logits_[r.fill_prompt[k]] = first_of_fill[k];
    if (routes) routes->set_prompt(r.fill_prompt[k], policy_.pass_routes(), k * T, lengths[k]);
  }
  return first_of_fill;
}

// Sets each admit's first position and column and records its slot's prompt; returns each admit's first logits.
std::vector<at::Tensor> SlotLayout::place(std::vector<Admit>& admits, const std::vector<int64_t>& entry,
                                          const at::Tensor& first_of_fill) {
  std::vector<at::Tensor> first;
  for (size_t i = 0; i < admits.size(); ++i) {
    auto& a = admits[i];
    const int64_t prompt = a.row / G_;
    a.start = start(a.row);
    a.column = static_cast<int64_t>(prompts_[prompt].size()) + a.start;
    if (entry[i] >= 0) {  // a continued row: its own logits, and its slot holds no prompt for others to copy
      first.push_back(first_of_fill[entry[i]]);
      prefix_[a.slot] = -1;
      continue;
    }
    first.push_back(first_logits_.at(prompt));
    prefix_[a.slot] = prompt;
  }
  return first;
}

// Drops what no waiting row needs: the first logits of prompts all of whose rows have slots, then prompt columns.
void SlotLayout::release_prompts() {
  // A prompt whose rows all have slots needs its first logits no more.
  for (auto it = first_logits_.begin(); it != first_logits_.end();)
    it = (it->first + 1) * G_ <= queued_ ? first_logits_.erase(it) : std::next(it);
  if (queued_ == N_) {
    // No row will need a prompt's columns again: free slots decode at column 0 (they attend over one column).
    free_col_ = 0;
    std::fill(prefix_.begin(), prefix_.end(), -1);
  }
}

// The running rows into the free slots in front: a free slot in front takes the running row from the back.
std::vector<int64_t> SlotLayout::order(const SlotState& s) const {
  const int64_t L = s.size();
  int64_t n = 0;
  for (int64_t i = 0; i < L; ++i) n += s.running(i);
  std::vector<int64_t> order(n);
  for (int64_t i = 0, hole = 0; i < L; ++i) {
    if (i < n) order[i] = i;
    if (i < n || !s.running(i)) continue;
    while (s.running(hole)) ++hole;
    order[hole++] = i;
  }
  return order;
}

// Moves the rows in place, copy_slots in chunks of a sixteenth of the pool, so the copy's temporary stays small.
void SlotLayout::compact(DecodeLoop& loop, const std::vector<int64_t>& order, const at::Tensor&) {
  const auto& s = loop.slots();
  std::vector<int64_t> from, to;
  for (int64_t i = 0; i < static_cast<int64_t>(order.size()); ++i)
    if (order[i] != i && s.running(order[i])) from.push_back(order[i]), to.push_back(i);  // a free slot: nothing to keep
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, s.size() / 16));
  for (size_t i = 0; i < from.size(); i += chunk) {
    const size_t e = std::min(from.size(), i + chunk);
    std::vector<int64_t> src(from.begin() + i, from.begin() + e), dst(to.begin() + i, to.begin() + e);
    int64_t columns = 1;
    for (auto f : src) columns = std::max(columns, s.col[f]);  // a row's cache holds columns [0, col)
    policy_.copy_slots(cache_, loop.upload(src), loop.upload(dst), columns);
  }
  prefix_.assign(order.size(), -1);
}

}  // namespace

std::unique_ptr<KvLayout> slot_layout(model::Policy& policy, const std::vector<std::vector<int64_t>>& prompts,
                                      int64_t G, int64_t slots, int64_t columns, const CallPlan* plan) {
  return std::make_unique<SlotLayout>(policy, prompts, G, slots, columns, plan);
}

}  // namespace gspo::rollout
