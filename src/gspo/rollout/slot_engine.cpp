#include "gspo/rollout/slot_engine.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "gspo/core/log.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/decode_graph.h"
#include "gspo/rollout/progress.h"
#include "gspo/rollout/stop_matcher.h"
#include "gspo/rollout/written.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::rollout {
namespace {

constexpr int64_t kFree = -1;
constexpr int64_t kHostSyncEveryGpu = 8;  // as the static loop: steps between host reads of the finished flags

// One call's state. Host vectors describe the slots; the tensors on the model's device hold what a step reads.
class SlotRun {
 public:
  SlotRun(model::Policy& policy, const tokenizer::Tokenizer& tok, const SamplingParams& params, SamplerStats& stats,
          RolloutProgress& progress, std::unique_ptr<DecodeGraph>& graph,
          const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise, int64_t slots,
          int64_t columns);
  void run(SampledRows& out);

 private:
  void refill();
  void sample();
  int64_t release();
  void compact();
  void decode();
  at::Tensor upload(const std::vector<int64_t>& v);  // one host-to-device transfer, counted

  model::Policy& policy_;
  const SamplingParams& params_;
  SamplerStats& stats_;
  RolloutProgress& progress_;
  std::unique_ptr<DecodeGraph>& graph_;  // null: eager decode
  const std::vector<std::vector<int64_t>>& prompts_;
  const NoiseKey noise_;
  const int64_t G_, N_, R_, C_, pad_, eos_;
  const c10::Device dev_;
  StopMatcher stops_;

  at::Tensor cache_;
  at::Tensor logits_;  // [S, V] float32: what each slot samples from next
  at::Tensor done_;    // [S] bool: the slot samples nothing (free, or its row has ended)
  at::Tensor next_;    // [S, 1] int64: the token each slot's next decode writes
  // Slot state on the device, advanced by the steps themselves; written from the host only at refill and compaction.
  at::Tensor rows_t_;   // [S] int64: batch row of each slot (N_, the discard row, for a free slot)
  at::Tensor steps_t_;  // [S] int64: response position each slot samples next
  at::Tensor cols_t_;   // [S] int64: cache column each running slot's next decode writes
  // Host mirrors of the same state, kept by the same arithmetic (no transfer): admission, width, compaction.
  std::vector<int64_t> row_;     // batch row in each slot, kFree when none
  std::vector<int64_t> step_;    // the response position each slot samples next
  std::vector<int64_t> col_;     // the cache column each slot's next decode writes
  std::vector<int64_t> prefix_;  // the prompt whose columns [0, length) each slot holds intact, -1 when none
  Written written_;              // rows [0, N) and a discard row N for slots that sample nothing
  std::vector<std::string> text_;
  std::map<int64_t, at::Tensor> first_logits_;  // prompt -> [V] logits of its last token, while rows of it wait
  int64_t queued_ = 0;                          // the next row to get a slot
  int64_t finished_ = 0;
  int64_t free_col_;   // the column a slot without a running row writes: past every prompt, 0 once none waits
  bool refilling_ = false;  // transfers now count as the refill's
};

SlotRun::SlotRun(model::Policy& policy, const tokenizer::Tokenizer& tok, const SamplingParams& params,
                 SamplerStats& stats, RolloutProgress& progress, std::unique_ptr<DecodeGraph>& graph,
                 const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise, int64_t slots,
                 int64_t columns)
    : policy_(policy), params_(params), stats_(stats), progress_(progress), graph_(graph), prompts_(prompts),
      noise_(noise), G_(G),
      N_(static_cast<int64_t>(prompts.size()) * G), R_(params.max_new_tokens), C_(columns),
      pad_(policy.manifest().pad_token_id), eos_(policy.manifest().eos_token_id), dev_(policy.device()),
      stops_(params.stop, tok), row_(slots, kFree), step_(slots, 0), col_(slots, columns - 1), prefix_(slots, -1),
      written_(N_ + 1, R_, pad_, dev_), text_(N_), free_col_(columns - 1) {
  auto on = torch::TensorOptions().device(dev_);
  cache_ = policy_.init_cache(slots, columns);
  stats_.kv_bytes = std::max<int64_t>(stats_.kv_bytes, cache_.nbytes());
  logits_ = torch::zeros({slots, policy_.manifest().vocab_size}, on.dtype(torch::kFloat));
  done_ = torch::ones({slots}, on.dtype(torch::kBool));
  next_ = torch::full({slots, 1}, pad_, on.dtype(torch::kLong));
  rows_t_ = torch::full({slots}, N_, on.dtype(torch::kLong));
  steps_t_ = torch::zeros({slots}, on.dtype(torch::kLong));
  cols_t_ = torch::full({slots}, columns - 1, on.dtype(torch::kLong));
  if (graph_) graph_->reset();
}

at::Tensor SlotRun::upload(const std::vector<int64_t>& v) {
  ++stats_.host_transfers;
  if (refilling_) ++stats_.refill_transfers;
  return torch::tensor(v, torch::kLong).to(dev_);
}

// Gives free slots to waiting rows in queue order, each row's prompt columns copied from a slot that holds them or
// prefilled (once per prompt, into every slot of it this refill gives out), and its first logits.
void SlotRun::refill() {
  struct Admit { int64_t slot, row, prompt; };
  std::vector<Admit> admits;
  for (int64_t s = 0; s < static_cast<int64_t>(row_.size()) && queued_ < N_; ++s)
    if (row_[s] == kFree) admits.push_back({s, queued_, queued_ / G_}), ++queued_;
  if (admits.empty()) return;
  refilling_ = true;

  std::map<int64_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>> copies;  // prompt -> (from, to) slots
  std::vector<int64_t> fill_prompts, fill_slots, fill_source;
  for (const auto& a : admits) {
    if (prefix_[a.slot] == a.prompt) continue;  // the slot already holds this prompt's columns
    auto holder = std::find(prefix_.begin(), prefix_.end(), a.prompt);
    if (holder != prefix_.end()) {  // in queue order only the refill's first prompt can have been given out before
      copies[a.prompt].first.push_back(holder - prefix_.begin());
      copies[a.prompt].second.push_back(a.slot);
      continue;
    }
    if (fill_prompts.empty() || fill_prompts.back() != a.prompt) fill_prompts.push_back(a.prompt);
    fill_slots.push_back(a.slot);
    fill_source.push_back(static_cast<int64_t>(fill_prompts.size()) - 1);
  }
  // Copies read before the prefill below overwrites any slot (a holder may be among the slots being refilled).
  for (const auto& [prompt, c] : copies)
    policy_.copy_slots(cache_, upload(c.first), upload(c.second), static_cast<int64_t>(prompts_[prompt].size()));
  if (!fill_prompts.empty()) {
    const int64_t K = static_cast<int64_t>(fill_prompts.size());
    int64_t T = 0;
    for (auto p : fill_prompts) T = std::max<int64_t>(T, prompts_[p].size());
    auto ids = torch::full({K, T}, pad_, torch::kLong);
    std::vector<int64_t> lengths(K);
    for (int64_t k = 0; k < K; ++k) {
      const auto& p = prompts_[fill_prompts[k]];
      lengths[k] = static_cast<int64_t>(p.size());
      std::copy(p.begin(), p.end(), ids.data_ptr<int64_t>() + k * T);
    }
    auto first = policy_.prefill_slots(ids.to(dev_), upload(lengths), cache_, upload(fill_slots), upload(fill_source));
    stats_.prefill_tokens += K * T;
    for (int64_t k = 0; k < K; ++k) first_logits_[fill_prompts[k]] = first[k];
  }
  std::vector<int64_t> slots;
  std::vector<at::Tensor> first;
  for (const auto& a : admits) {
    slots.push_back(a.slot);
    first.push_back(first_logits_.at(a.prompt));
    row_[a.slot] = a.row;
    step_[a.slot] = 0;
    col_[a.slot] = static_cast<int64_t>(prompts_[a.prompt].size());
    prefix_[a.slot] = a.prompt;
  }
  // The admitted slots' state in one upload: slots, rows, columns.
  std::vector<int64_t> state = slots;
  for (const auto& a : admits) state.push_back(a.row);
  for (const auto& a : admits) state.push_back(col_[a.slot]);
  const int64_t k = static_cast<int64_t>(admits.size());
  auto st = upload(state);
  auto idx = st.narrow(0, 0, k);
  rows_t_.index_copy_(0, idx, st.narrow(0, k, k));
  cols_t_.index_copy_(0, idx, st.narrow(0, 2 * k, k));
  steps_t_.index_fill_(0, idx, 0);
  logits_.index_copy_(0, idx, torch::stack(first));
  done_.index_fill_(0, idx, false);
  refilling_ = false;
  // A prompt whose rows all have slots needs its first logits no more.
  for (auto it = first_logits_.begin(); it != first_logits_.end();)
    it = (it->first + 1) * G_ <= queued_ ? first_logits_.erase(it) : std::next(it);
}

// Samples one token in every slot with a running row and records it (tokens, log-probs, ends), as the static loop's
// record() does, with each slot at its own response position.
void SlotRun::sample() {
  const auto& p = params_;
  // The step reads its state where it lives: the device tensors; a CPU keys its noise from the host mirrors.
  const auto& rows_t = rows_t_;
  const auto steps_t = steps_t_.clamp_max(R_ - 1);
  at::Tensor u;
  if (dev_.is_cpu()) {
    std::vector<int64_t> rows(row_.size()), steps(row_.size());
    for (size_t s = 0; s < row_.size(); ++s) {
      rows[s] = row_[s] == kFree ? N_ : row_[s];
      steps[s] = std::min(step_[s], R_ - 1);
    }
    u = row_uniforms(noise_, rows, steps);
  } else {
    u = row_uniforms(noise_, rows_t, steps_t);
  }
  const bool ban = p.min_new_tokens > 0;
  auto draw = sample_next(logits_, p, u, ban ? eos_ : -1, ban ? steps_t < p.min_new_tokens : at::Tensor());

  auto active = done_.logical_not();
  auto row_w = torch::where(active, rows_t, N_);
  written_.tokens.index_put_({row_w, steps_t}, torch::where(active, draw.tokens, pad_));
  written_.logprobs.index_put_({row_w, steps_t}, torch::where(active, draw.logprobs, 0.0));
  written_.length.index_add_(0, row_w, active.to(torch::kLong));
  auto eos = active.logical_and(draw.tokens == eos_);
  auto special = eos;  // ends that are not the length cap
  if (stops_.active()) {
    std::vector<std::string*> texts(row_.size(), nullptr);  // free slots are inactive: never read
    std::vector<bool> check(row_.size());
    for (size_t s = 0; s < row_.size(); ++s) {
      if (row_[s] != kFree) texts[s] = &text_[row_[s]];
      check[s] = step_[s] + 1 >= p.min_new_tokens;
    }
    special = special.logical_or(stops_.advance(draw.tokens, active, eos_, texts, check).to(dev_));
    stats_.host_transfers += 2;  // the tokens (inactive rows marked) to the host, the stop flags back
  }
  auto finish = torch::where(eos, static_cast<int64_t>(Finish::kEos), static_cast<int64_t>(Finish::kStop));
  written_.finish.index_put_({torch::where(special, row_w, N_)}, finish);
  done_ = done_.logical_or(special).logical_or(active.logical_and(steps_t >= R_ - 1));
  next_ = torch::where(done_, pad_, draw.tokens).unsqueeze(1);
}

// Frees the slots whose rows have ended: reads the finished flags (with the progress figure, in one copy), the loop's
// one read between refills unless stop strings need the tokens each step. Returns the number of slots still running
// a row.
int64_t SlotRun::release() {
  ++stats_.host_syncs;
  ++stats_.host_transfers;  // the flags and (for the progress line) the tokens written so far, in one read
  auto both = torch::cat({done_.to(torch::kLong), written_.length.narrow(0, 0, N_).sum().unsqueeze(0)}).to(torch::kCPU);
  const int64_t* d = both.data_ptr<int64_t>();
  int64_t running = 0;
  for (size_t s = 0; s < row_.size(); ++s) {
    if (row_[s] == kFree) continue;
    if (!d[s]) {
      ++running;
      continue;
    }
    row_[s] = kFree;
    col_[s] = free_col_;  // a free slot's decode writes past every prompt, so its prompt columns stay intact
    ++finished_;
  }
  if (progress_.active()) progress_.update(finished_, d[row_.size()]);
  return running;
}

// With no row waiting, once a quarter of the slots are free, moves the running rows into the free slots in front
// (in place, copy_slots in chunks of a sixteenth of the pool, so the copy's temporary stays small) and decodes only the
// first n slots from then on: the tail of long responses costs what its rows cost, and no second cache is allocated.
void SlotRun::compact() {
  const int64_t L = static_cast<int64_t>(row_.size());
  int64_t n = 0;
  for (int64_t s = 0; s < L; ++s) n += row_[s] != kFree;
  if ((L - n) * 4 < L) return;
  std::vector<int64_t> from, to, order(n);
  for (int64_t s = 0, hole = 0; s < L; ++s) {
    if (s < n) order[s] = s;
    if (s < n || row_[s] == kFree) continue;
    while (row_[hole] != kFree) ++hole;  // a free slot in front takes the running row at s
    from.push_back(s);
    to.push_back(hole);
    order[hole++] = s;
  }
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, L / 16));
  for (size_t i = 0; i < from.size(); i += chunk) {
    const size_t e = std::min(from.size(), i + chunk);
    std::vector<int64_t> src(from.begin() + i, from.begin() + e), dst(to.begin() + i, to.begin() + e);
    int64_t columns = 1;
    for (auto f : src) columns = std::max(columns, col_[f]);  // a row's cache holds columns [0, col)
    policy_.copy_slots(cache_, upload(src), upload(dst), columns);
  }
  auto idx = upload(order);
  logits_ = logits_.index_select(0, idx);
  done_ = done_.index_select(0, idx);
  next_ = next_.index_select(0, idx);
  rows_t_ = rows_t_.index_select(0, idx);
  steps_t_ = steps_t_.index_select(0, idx);
  cols_t_ = cols_t_.index_select(0, idx);
  if (graph_) graph_->reset();  // captured for the larger pool
  auto pick = [&](std::vector<int64_t>& v) {
    std::vector<int64_t> out(n);
    for (int64_t i = 0; i < n; ++i) out[i] = v[order[i]];
    v = std::move(out);
  };
  pick(row_), pick(step_), pick(col_), pick(prefix_);
}

void SlotRun::decode() {
  int64_t width = 1;
  for (size_t s = 0; s < row_.size(); ++s)
    if (row_[s] != kFree) width = std::max(width, col_[s] + 1);
  // A slot without a running row (free, or ended since the last sync) writes at free_col_, as its host mirror says.
  auto cols = torch::where(done_, free_col_, cols_t_);
  if (graph_ && !graph_->ready()) {
    if (graph_->capture_slots(policy_, cache_, next_, cols, C_)) {
      stats_.graph_captures++;
    } else {
      log::warn("rollout.cuda_graphs: capture failed ({}); decoding eagerly", graph_->last_error().substr(0, 300));
      graph_.reset();
    }
  }
  // A graph replays every cache column (static shapes); eager decode reads only up to the longest running row.
  logits_ = graph_ ? graph_->replay_slots(next_, cols) : policy_.decode_slots(next_, cache_, cols, std::min(width, C_));
  stats_.decode_steps++;
  stats_.row_steps += static_cast<int64_t>(row_.size());
  steps_t_ += 1;
  cols_t_ = (cols_t_ + 1).clamp_max(C_ - 1);
  for (size_t s = 0; s < row_.size(); ++s) {
    ++step_[s];
    col_[s] = std::min(col_[s] + 1, C_ - 1);
  }
}

void SlotRun::run(SampledRows& out) {
  const int64_t sync_every = stops_.active()                ? 1
                             : params_.host_sync_every > 0 ? params_.host_sync_every
                             : dev_.is_cpu()               ? 1
                                                           : kHostSyncEveryGpu;
  refill();
  for (int64_t steps = 1;; ++steps) {
    sample();
    stats_.slot_steps += stats_.slots;  // the pool the budget holds, dropped free slots included
    const bool at_sync = steps % sync_every == 0;
    const int64_t running = at_sync ? release() : 1;
    if (running == 0 && queued_ == N_) break;
    // The sampled tokens go into the cache, then free slots take waiting rows (their logits come from the prefill).
    if (running > 0) decode();
    if (at_sync) {
      refill();
      if (queued_ == N_) {
        // No row will need a prompt's columns again: free slots decode at column 0 (they attend over one column).
        free_col_ = 0;
        for (size_t s = 0; s < row_.size(); ++s)
          if (row_[s] == kFree) col_[s] = 0, prefix_[s] = -1;
        refilling_ = true;
        compact();
        refilling_ = false;
      }
    }
  }
  written_.collect(N_, out, 0);
}

}  // namespace

void run_slots(model::Policy& policy, const tokenizer::Tokenizer& tok, const SamplingParams& params, SamplerStats& stats,
               RolloutProgress& progress, std::unique_ptr<DecodeGraph>& graph,
               const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise, int64_t slots,
               int64_t columns, SampledRows& out) {
  SlotRun(policy, tok, params, stats, progress, graph, prompts, G, noise, slots, columns).run(out);
  if (graph) graph->reset();  // the pool is freed
}

}  // namespace gspo::rollout
