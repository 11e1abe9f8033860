#include "gspo/rollout/decode_loop.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "gspo/core/log.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/decode_graph.h"
#include "gspo/rollout/progress.h"
#include "gspo/rollout/route_store.h"

namespace gspo::rollout {
namespace {

constexpr int64_t kHostSyncEveryGpu = 8;  // GPU: steps between host reads of the finished flags

// Steps between synchronisation points: every step on a CPU (a read costs nothing there) or with stop strings (the
// tokens come to the host each step anyway), else rollout.host_sync_every or kHostSyncEveryGpu.
int64_t sync_interval(const SamplingParams& p, bool stops, c10::Device dev) {
  if (stops) return 1;
  if (p.host_sync_every > 0) return p.host_sync_every;
  return dev.is_cpu() ? 1 : kHostSyncEveryGpu;
}

}  // namespace

std::pair<at::Tensor, at::Tensor> left_pad(const std::vector<std::vector<int64_t>>& prompts, int64_t P, int64_t pad) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  auto ids = torch::full({B, P}, pad, torch::kLong);
  auto mask = torch::zeros({B, P}, torch::kLong);
  auto ia = ids.accessor<int64_t, 2>();
  auto ma = mask.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& p = prompts[b];
    const int64_t off = P - static_cast<int64_t>(p.size());
    for (size_t j = 0; j < p.size(); ++j) {
      ia[b][off + j] = p[j];
      ma[b][off + j] = 1;
    }
  }
  return {ids, mask};
}

DecodeLoop::DecodeLoop(const LoopContext& ctx, KvLayout& layout, const NoiseKey& noise, int64_t n, int64_t first,
                       const CallPlan* plan, int64_t G)
    : ctx_(ctx), layout_(layout), noise_(noise), n_(n), first_(first), R_(ctx.params.max_new_tokens),
      span_(ctx.params.max_new_tokens + ctx.params.insert_capacity), pad_(ctx.policy.manifest().pad_token_id),
      eos_(ctx.policy.manifest().eos_token_id), eos_ids_(ctx.policy.manifest().eos_token_ids),
      dev_(ctx.policy.device()), pool_(layout.pool()),
      turn_tok_(ctx.hook ? ctx.hook->turn_token() : -1), plan_(plan), G_(G), hash_(n + 1), ended_(n, 0),
      group_left_((n + G - 1) / G, G), stops_(ctx.params.stop, ctx.tok), written_(n + 1, span_, pad_, dev_),
      text_(n) {
  for (int64_t r = 0; r <= n_; ++r)
    hash_[r] = plan_ && r < n_ ? plan_->rows.at(r).noise : row_hash(noise_, r);
  if (!dev_.is_cpu()) hash_dev_ = upload(std::vector<int64_t>(hash_.begin(), hash_.end()));  // (the bits, as int64)
  if (n_ % G_ != 0) group_left_.back() = n_ % G_;
  if (eos_ids_.size() > 1) eos_dev_ = upload(eos_ids_);
  if (plan_)
    for (size_t g = 0; g < plan_->must_finish.size(); ++g) due_left_ += plan_->must_finish[g] != 0;
  start_rows();
  auto on = torch::TensorOptions().device(dev_);
  s_.done = torch::ones({pool_}, on.dtype(torch::kBool));
  s_.paused = torch::zeros({pool_}, on.dtype(torch::kBool));
  s_.feeding = torch::zeros({pool_}, on.dtype(torch::kBool));
  s_.next = torch::full({pool_, 1}, pad_, on.dtype(torch::kLong));
  s_.rows = torch::full({pool_}, n_, on.dtype(torch::kLong));
  s_.steps = torch::zeros({pool_}, on.dtype(torch::kLong));
  s_.cols = torch::zeros({pool_}, on.dtype(torch::kLong));
  s_.inserted = torch::zeros({pool_}, on.dtype(torch::kLong));
  s_.row.assign(pool_, kFree);
  s_.step.assign(pool_, 0);
  s_.col.assign(pool_, 0);
  s_.held.assign(pool_, false);
  s_.ins.assign(pool_, 0);
  s_.turn.assign(pool_, false);
  if (turn_tok_ >= 0 && !layout.can_pause())
    throw std::logic_error("a turn token pauses rows: it needs a model with the slot methods (a static batch shares "
                           "one column)");
}

void DecodeLoop::row_ended(int64_t row) {
  if (ended_[row]) return;
  ended_[row] = 1;
  const int64_t g = row / G_;
  if (--group_left_[g] > 0) return;
  ++groups_done_;
  if (plan_ && g < static_cast<int64_t>(plan_->must_finish.size()) && plan_->must_finish[g]) --due_left_;
}

bool DecodeLoop::plan_stops() const {
  return plan_ && plan_->stop_after_groups > 0 && groups_done_ >= plan_->stop_after_groups && due_left_ == 0;
}

// The plan's rows with tokens or an end: their responses so far in Written, in one upload each (tokens and log-probs);
// the ended ones count as finished.
void DecodeLoop::start_rows() {
  if (!plan_) return;
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < n_; ++r) {
    const auto& p = plan_->rows[r];
    if (!p.ids.empty() || p.finish != Finish::kCarried) rows.push_back(r);
  }
  if (rows.empty()) return;
  const int64_t k = static_cast<int64_t>(rows.size());
  auto tokens = torch::full({k, span_}, pad_, torch::kLong);
  auto logprobs = torch::zeros({k, span_}, torch::kFloat);
  std::vector<int64_t> ints(rows);  // rows, lengths, finishes, then the tokens
  for (auto r : rows) ints.push_back(static_cast<int64_t>(plan_->rows[r].ids.size()));
  for (auto r : rows) {  // a continued row's end is written when it ends, the length cap's by default
    const auto f = plan_->rows[r].finish;
    ints.push_back(static_cast<int64_t>(f == Finish::kCarried ? Finish::kLength : f));
  }
  for (int64_t i = 0; i < k; ++i) {
    const auto& p = plan_->rows[rows[i]];
    std::copy(p.ids.begin(), p.ids.end(), tokens[i].data_ptr<int64_t>());
    std::copy(p.logprobs.begin(), p.logprobs.end(), logprobs[i].data_ptr<float>());
    if (stops_.active())
      for (auto id : p.ids)
        if (std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end()) stops_.append(text_[rows[i]], id);
    if (p.finish != Finish::kCarried) row_ended(rows[i]), ++finished_;
  }
  auto u = upload(ints);
  auto idx = u.narrow(0, 0, k);
  written_.length.index_copy_(0, idx, u.narrow(0, k, k));
  written_.finish.index_copy_(0, idx, u.narrow(0, 2 * k, k));
  written_.tokens.index_copy_(0, idx, tokens.to(dev_));
  written_.logprobs.index_copy_(0, idx, logprobs.to(dev_));
  ctx_.stats.host_transfers += 2;
}

at::Tensor DecodeLoop::upload(const std::vector<int64_t>& v) {
  ++ctx_.stats.host_transfers;
  ++ctx_.stats.refill_transfers;
  return torch::tensor(v, torch::kLong).to(dev_);
}

void DecodeLoop::admit(const std::vector<Admit>& admits, const at::Tensor& first_logits) {
  const int64_t k = static_cast<int64_t>(admits.size());
  if (k == 0) return;
  std::vector<int64_t> state;  // slots, rows, columns, starts
  for (const auto& a : admits) state.push_back(a.slot);
  for (const auto& a : admits) state.push_back(a.row);
  for (const auto& a : admits) state.push_back(a.column);
  for (const auto& a : admits) state.push_back(a.start);
  for (const auto& a : admits) {
    s_.row[a.slot] = a.row;
    s_.step[a.slot] = a.start;
    s_.col[a.slot] = a.column;
    s_.ins[a.slot] = 0;
    s_.turn[a.slot] = false;
    s_.held[a.slot] = false;  // (a slot is freed unpaused: its row sampled its end, or end() unpaused it)
  }
  auto st = upload(state);
  auto idx = st.narrow(0, 0, k);
  s_.rows.index_copy_(0, idx, st.narrow(0, k, k));
  s_.cols.index_copy_(0, idx, st.narrow(0, 2 * k, k));
  s_.steps.index_copy_(0, idx, st.narrow(0, 3 * k, k));
  s_.inserted.index_fill_(0, idx, 0);
  s_.done.index_fill_(0, idx, false);
  s_.feeding.index_fill_(0, idx, false);
  if (k == pool_ && !s_.logits.defined())  // the whole pool at once (a static batch): no copy of the logits
    s_.logits = first_logits;
  else {
    if (!s_.logits.defined()) s_.logits = torch::zeros({pool_, first_logits.size(1)}, first_logits.options());
    s_.logits.index_copy_(0, idx, first_logits);
  }
}

void DecodeLoop::running_slot(int64_t slot, const char* what) const {
  if (slot < 0 || slot >= s_.size() || !s_.running(slot))
    throw std::logic_error(std::string(what) + ": slot " + std::to_string(slot) + " has no running row");
}

void DecodeLoop::pause(int64_t slot) {
  if (!layout_.can_pause())
    throw std::logic_error("pausing a row needs a model with the slot methods (a static batch shares one column)");
  running_slot(slot, "pause");
  if (!s_.held[slot]) s_.held[slot] = true, held_dirty_ = true;
}

void DecodeLoop::resume(int64_t slot) {
  running_slot(slot, "resume");
  s_.turn[slot] = false;
  if (s_.held[slot]) s_.held[slot] = false, held_dirty_ = true;
}

std::vector<int64_t> DecodeLoop::tokens(int64_t slot) {
  running_slot(slot, "tokens");
  ++ctx_.stats.host_transfers;
  auto t = written_.tokens[s_.row[slot]].narrow(0, 0, std::min(s_.step[slot] + 1, span_)).to(torch::kCPU).contiguous();
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

void DecodeLoop::end(int64_t slot, Finish why) {
  running_slot(slot, "end");
  ends_.push_back({slot, s_.row[slot], static_cast<int64_t>(why)});
  row_ended(s_.row[slot]);
  s_.row[slot] = kFree;
  s_.turn[slot] = false;
  if (s_.held[slot]) s_.held[slot] = false, held_dirty_ = true;
  ++finished_;
}

// The rows the hook ended, in one upload: done, their finish written, nothing more to feed.
void DecodeLoop::apply_ends() {
  if (ends_.empty()) return;
  std::vector<int64_t> up;  // slots, rows, finishes
  for (int part = 0; part < 3; ++part)
    for (const auto& e : ends_) up.push_back(e[part]);
  const int64_t k = static_cast<int64_t>(ends_.size());
  auto u = upload(up);
  auto slots = u.narrow(0, 0, k);
  s_.done.index_fill_(0, slots, true);
  s_.feeding.index_fill_(0, slots, false);
  s_.next.index_fill_(0, slots, pad_);
  written_.finish.index_put_({u.narrow(0, k, k)}, u.narrow(0, 2 * k, k));
  ends_.clear();
}

int64_t DecodeLoop::append(int64_t slot, const std::vector<int64_t>& tokens) {
  if (!layout_.can_append())
    throw std::logic_error("writing tokens into a response needs a model with append_slots (slot_api 2)");
  running_slot(slot, "append");
  const int64_t take = std::min<int64_t>(room(slot), static_cast<int64_t>(tokens.size()));
  auto queued = std::find_if(appends_.begin(), appends_.end(), [&](const auto& a) { return a.first == slot; });
  ctx_.stats.inserted_tokens += take;
  ctx_.stats.inserted_truncated += static_cast<int64_t>(tokens.size()) - take;
  if (take == 0) return 0;
  if (queued == appends_.end()) queued = appends_.insert(appends_.end(), {slot, {}});
  queued->second.insert(queued->second.end(), tokens.begin(), tokens.begin() + take);
  return take;
}

int64_t DecodeLoop::room(int64_t slot) const {
  running_slot(slot, "room");
  auto queued = std::find_if(appends_.begin(), appends_.end(), [&](const auto& a) { return a.first == slot; });
  const int64_t already = queued == appends_.end() ? 0 : static_cast<int64_t>(queued->second.size());
  // Positions: the row's last sampled token at step, these after it, and one left for the model's next token.
  return std::max<int64_t>(0, span_ - 2 - s_.step[slot] - already);
}

// The hook's appends. One append_slots call writes K columns from each row's column (its tokens, right-padded to the
// longest, K): a row with fewer than K columns of cache left goes to a later call with shorter ones. Its columns run
// to prompt + span_, so K <= span_ - step keeps it inside.
void DecodeLoop::apply_appends() {
  std::stable_sort(appends_.begin(), appends_.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  while (!appends_.empty()) {
    const int64_t K = static_cast<int64_t>(appends_.front().second.size());
    std::vector<std::pair<int64_t, std::vector<int64_t>>> now, later;
    for (auto& a : appends_) (K <= span_ - s_.step[a.first] ? now : later).push_back(std::move(a));
    append_rows(now);
    appends_ = std::move(later);
  }
}

// Appends in one upload and one append_slots call: each row's pending token (sampled, not yet in the cache) and all
// but the last of its new tokens go into the cache; the last becomes the token its next decode writes.
void DecodeLoop::append_rows(const std::vector<std::pair<int64_t, std::vector<int64_t>>>& appends) {
  const int64_t M = static_cast<int64_t>(appends.size());
  int64_t K = 0, total = 0, width = 1;
  for (const auto& [slot, t] : appends) {
    K = std::max<int64_t>(K, t.size());
    total += static_cast<int64_t>(t.size());
    width = std::max<int64_t>(width, s_.col[slot] + static_cast<int64_t>(t.size()));
  }
  // slots, lengths, columns, rows, tokens [M, K] right-padded, then each token's Written (row, position, id)
  std::vector<int64_t> up;
  for (const auto& a : appends) up.push_back(a.first);
  for (const auto& a : appends) up.push_back(static_cast<int64_t>(a.second.size()));
  for (const auto& a : appends) up.push_back(s_.col[a.first]);
  for (const auto& a : appends) up.push_back(s_.row[a.first]);
  for (const auto& a : appends) {
    up.insert(up.end(), a.second.begin(), a.second.end());
    up.insert(up.end(), K - a.second.size(), pad_);
  }
  for (int part = 0; part < 3; ++part)
    for (const auto& [slot, t] : appends)
      for (size_t j = 0; j < t.size(); ++j)
        up.push_back(part == 0 ? s_.row[slot] : part == 1 ? s_.step[slot] + 1 + static_cast<int64_t>(j) : t[j]);
  auto u = upload(up);
  auto slots = u.narrow(0, 0, M), lengths = u.narrow(0, M, M), cols = u.narrow(0, 2 * M, M);
  auto rows = u.narrow(0, 3 * M, M), toks = u.narrow(0, 4 * M, M * K).view({M, K});
  const int64_t w = 4 * M + M * K;
  auto wr = u.narrow(0, w, total), wp = u.narrow(0, w + total, total), wt = u.narrow(0, w + 2 * total, total);

  auto ids = torch::cat({s_.next.index_select(0, slots), toks}, 1).narrow(1, 0, K);
  layout_.append(ids, lengths, slots, cols, width);
  if (ctx_.routes) record_append(appends, K);
  s_.next.index_copy_(0, slots, toks.gather(1, (lengths - 1).unsqueeze(1)));
  written_.tokens.index_put_({wr, wp}, wt);
  written_.inserted.index_put_({wr, wp}, torch::ones({total}, u.options().dtype(torch::kBool)));
  written_.length.index_add_(0, rows, lengths);
  s_.steps.index_add_(0, slots, lengths);
  s_.cols.index_add_(0, slots, lengths);
  s_.inserted.index_add_(0, slots, lengths);
  for (const auto& [slot, t] : appends) {
    const int64_t k = static_cast<int64_t>(t.size());
    s_.step[slot] += k, s_.col[slot] += k, s_.ins[slot] += k;
    if (stops_.active())
      for (auto id : t) stops_.append(text_[s_.row[slot]], id);
  }
  any_ins_ = true;
}

// The experts of an append_slots call's [M, K] tokens: row m's column j is its token at response position step + j
// (its pending token, then all but the last of the new ones); columns past its length are padding.
void DecodeLoop::record_append(const std::vector<std::pair<int64_t, std::vector<int64_t>>>& appends, int64_t K) {
  std::vector<int64_t> where;  // rows, then positions, M x K each
  for (int part = 0; part < 2; ++part)
    for (const auto& [slot, t] : appends)
      for (int64_t j = 0; j < K; ++j) {
        const bool real = j < static_cast<int64_t>(t.size());
        where.push_back(part == 0 ? (real ? s_.row[slot] : n_) : s_.step[slot] + j);
      }
  const int64_t MK = static_cast<int64_t>(appends.size()) * K;
  auto u = upload(where);
  ctx_.routes->put(u.narrow(0, 0, MK), u.narrow(0, MK, MK), ctx_.policy.pass_routes());
}

// Samples one token in every slot with a running, unpaused row and records it (token, log-prob, end), each slot at
// its own response position: what the row samples depends on its row and position, never on its slot or step.
void DecodeLoop::sample() {
  const auto& p = ctx_.params;
  const int64_t S = s_.size();
  // With a turn token, rows may have paused on the device since the last sync: the paused mask always applies.
  bool any_held = turn_tok_ >= 0, ban = false, may_cap = false;  // (the host knows which rows could hit the cap now)
  for (int64_t s = 0; s < S; ++s) {
    if (!s_.running(s)) continue;
    any_held = any_held || s_.held[s];
    ban = ban || (!s_.held[s] && s_.step[s] - s_.ins[s] < p.min_new_tokens);  // EOS would end it short
    may_cap = may_cap || s_.step[s] - s_.ins[s] >= R_ - 1 || s_.step[s] >= span_ - 1;
  }
  const auto steps_t = s_.steps.clamp_max(span_ - 1);
  const auto own_t = any_ins_ ? steps_t - s_.inserted : steps_t;  // the model's tokens before this one
  at::Tensor u;
  if (dev_.is_cpu()) {  // the host mirrors key the noise: no tensor arithmetic per row
    std::vector<uint64_t> hashes(S);
    std::vector<int64_t> steps(S);
    for (int64_t s = 0; s < S; ++s) {
      hashes[s] = hash_[s_.running(s) ? s_.row[s] : n_];
      steps[s] = std::min(s_.step[s], span_ - 1);
    }
    u = hash_uniforms(hashes, steps);
  } else {
    u = hash_uniforms(hash_dev_.index_select(0, s_.rows), steps_t);
  }
  auto draw = sample_next(s_.logits, p, u, ban ? eos_ids_ : std::vector<int64_t>{},
                          ban ? own_t < p.min_new_tokens : at::Tensor());

  auto active = s_.done.logical_not();
  if (any_held) active = active.logical_and(s_.paused.logical_not());
  auto row_w = torch::where(active, s_.rows, n_);
  written_.tokens.index_put_({row_w, steps_t}, torch::where(active, draw.tokens, pad_));
  written_.logprobs.index_put_({row_w, steps_t}, torch::where(active, draw.logprobs, 0.0));
  written_.length.index_add_(0, row_w, active.to(torch::kLong));
  // any EOS id ends the row (one compare per id on the device: no host read, capturable)
  auto eos = active.logical_and(eos_dev_.defined() ? (draw.tokens.unsqueeze(1) == eos_dev_).any(1) : draw.tokens == eos_);
  at::Tensor turn;  // rows whose token ends their turn: they pause below, unless the row ends here anyway
  if (turn_tok_ >= 0) {
    turn = active.logical_and(draw.tokens == turn_tok_);
    if (std::find(eos_ids_.begin(), eos_ids_.end(), turn_tok_) != eos_ids_.end()) eos = eos.logical_and(turn.logical_not());
  }
  auto special = eos;  // ends that are not the length cap
  if (stops_.active()) {
    std::vector<std::string*> texts(S, nullptr);  // slots that sample nothing are inactive: never read
    std::vector<bool> check(S);
    for (int64_t s = 0; s < S; ++s) {
      if (s_.running(s)) texts[s] = &text_[s_.row[s]];
      check[s] = s_.step[s] - s_.ins[s] + 1 >= p.min_new_tokens;  // vLLM's rule: from the min_new_tokens-th token
    }
    special = special.logical_or(stops_.advance(draw.tokens, active, eos_ids_, texts, check).to(dev_));
    ctx_.stats.host_transfers += 2;  // the tokens (inactive rows marked) to the host, the stop flags back
  }
  auto finish = torch::where(eos, static_cast<int64_t>(Finish::kEos), static_cast<int64_t>(Finish::kStop));
  written_.finish.index_put_({torch::where(special, row_w, n_)}, finish);
  auto ended = special;
  if (may_cap) {
    auto capped = any_ins_ ? (own_t >= R_ - 1).logical_or(steps_t >= span_ - 1) : steps_t >= R_ - 1;
    ended = ended.logical_or(active.logical_and(capped));
  }
  auto next = torch::where(ended, pad_, draw.tokens).unsqueeze(1);
  if (any_held) {  // a paused slot keeps the token it sampled last, to write when it resumes
    s_.next = torch::where(s_.paused.unsqueeze(1), s_.next, next);
    s_.feeding = torch::where(s_.paused, s_.feeding, active);
  } else {
    s_.next = next;
    s_.feeding = active;
  }
  s_.done = s_.done.logical_or(ended);
  if (turn.defined()) s_.paused = s_.paused.logical_or(turn.logical_and(ended.logical_not()));
}

bool DecodeLoop::all_capped() const {
  for (int64_t s = 0; s < s_.size(); ++s)
    if (s_.running(s) && !s_.held[s] && s_.step[s] - s_.ins[s] < R_ - 1 && s_.step[s] < span_ - 1) return false;
  return true;
}

// Frees the slots whose rows have ended. With `read`, reads the finished flags (and, for the progress line, the
// tokens written so far) in one copy; without, frees the rows the host knows ended at the length cap. Returns the
// number of slots still running a row.
int64_t DecodeLoop::release(bool read) {
  at::Tensor both;
  const int64_t S = s_.size();
  if (read) {  // done flags, the progress figure and, with a turn token, the paused flags and steps: one copy
    ++ctx_.stats.host_syncs;
    ++ctx_.stats.host_transfers;
    std::vector<at::Tensor> parts{s_.done.to(torch::kLong), written_.length.narrow(0, 0, n_).sum().unsqueeze(0)};
    if (turn_tok_ >= 0) parts.insert(parts.end(), {s_.paused.to(torch::kLong), s_.steps});
    both = torch::cat(parts).to(torch::kCPU);
  }
  const int64_t* d = read ? both.data_ptr<int64_t>() : nullptr;
  int64_t running = 0;
  for (int64_t s = 0; s < S; ++s) {
    if (!s_.running(s)) continue;
    const bool ended = read ? d[s] != 0 : !s_.held[s];  // unread: every unpaused running slot hit the cap
    if (!ended) {
      ++running;
      if (read && turn_tok_ >= 0 && d[S + 1 + s] != 0 && !s_.held[s]) {  // paused by its turn token since the last sync
        const int64_t behind = s_.step[s] - d[2 * S + 1 + s];              // decodes the host counted, the device did not
        s_.held[s] = true, s_.turn[s] = true;
        s_.step[s] -= behind, s_.col[s] -= behind;
      }
      continue;
    }
    row_ended(s_.row[s]);
    s_.row[s] = kFree;
    ++finished_;
  }
  if (read && ctx_.progress.active()) ctx_.progress.update(first_ + finished_, d[S]);
  return running;
}

int64_t DecodeLoop::call_hook(int64_t running) {
  if (!ctx_.hook || running == 0) return running;
  ctx_.hook->at_sync(*this);
  running -= static_cast<int64_t>(ends_.size());
  apply_ends();
  apply_appends();
  if (held_dirty_) {
    held_dirty_ = false;
    std::vector<int64_t> held(s_.held.begin(), s_.held.end());
    s_.paused = upload(held).to(torch::kBool);
  }
  if (running == 0) return 0;
  for (int64_t s = 0; s < s_.size(); ++s)
    if (s_.running(s) && !s_.held[s]) return running;
  if (!layout_.waiting() || running == s_.size())
    throw std::logic_error("every running row is paused, no waiting row can take a slot, and the slot hook resumed "
                           "none: nothing could ever resume them");
  return running;
}

// Once no row waits and a quarter of the slots are free, the running rows move to the front (in the order the layout
// chooses) and only they decode from then on: the tail of long responses costs what its rows cost.
// With CUDA graphs the pool shrinks to a power of two (compacted_pool), the running rows in front and free slots after
// them: a graph is captured per pool size, so a call captures at most 1 + log2(pool) graphs.
void DecodeLoop::compact() {
  const int64_t L = s_.size();
  int64_t n = 0;
  for (int64_t s = 0; s < L; ++s) n += s_.running(s);
  const int64_t T = compacted_pool(n, L, ctx_.graph != nullptr);
  if (T == L) return;
  auto order = layout_.order(s_);
  // Free slots fill the bucket past the running rows: a free slot in place first, then any other not yet placed.
  std::vector<bool> placed(L, false);
  for (auto o : order) placed[o] = true;
  order.resize(T, -1);
  for (int64_t i = n; i < T; ++i)
    if (!s_.running(i) && !placed[i]) order[i] = i, placed[i] = true;
  for (int64_t i = n, j = 0; i < T; ++i) {
    if (order[i] >= 0) continue;
    while (s_.running(j) || placed[j]) ++j;
    order[i] = j, placed[j] = true;
  }
  auto idx = upload(order);
  layout_.compact(*this, order, idx);
  for (auto* t : {&s_.logits, &s_.done, &s_.paused, &s_.feeding, &s_.next, &s_.rows, &s_.steps, &s_.cols, &s_.inserted})
    *t = t->index_select(0, idx);
  auto pick = [&](auto& v) {
    std::remove_reference_t<decltype(v)> out(T);
    for (int64_t i = 0; i < T; ++i) out[i] = v[order[i]];
    v = std::move(out);
  };
  pick(s_.row), pick(s_.step), pick(s_.col), pick(s_.held), pick(s_.ins), pick(s_.turn);
  if (ctx_.graph) ctx_.graph->reset();  // captured for the larger pool
}

// One decode: every slot writes its `next` (a paused slot writes pad, its token kept for its resume) at its column.
// Eager, or through a CUDA graph captured on first use for the current pool (a failed capture switches the sampler to
// eager for good, with one warning).
void DecodeLoop::decode() {
  const bool any_held = turn_tok_ >= 0 || std::find(s_.held.begin(), s_.held.end(), true) != s_.held.end();
  auto ids = any_held ? torch::where(s_.paused.unsqueeze(1), pad_, s_.next) : s_.next;
  auto wrote = any_held ? s_.feeding.logical_and(s_.paused.logical_not()) : s_.feeding;
  layout_.stage(s_, ids, wrote);
  auto& graph = ctx_.graph;
  if (graph && !graph->ready()) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool captured = layout_.capture(*graph);
    ctx_.stats.capture_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (captured) {
      ctx_.stats.graph_captures++;
    } else {
      log::warn("rollout.cuda_graphs: capture failed ({}); decoding eagerly", graph->last_error().substr(0, 300));
      graph.reset();
    }
  }
  s_.logits = graph ? layout_.replay(*graph) : layout_.decode();
  if (ctx_.routes)  // each written token's experts at its position (a graph's: its static output, decode_graph.h)
    ctx_.routes->put(torch::where(wrote.logical_and(s_.done.logical_not()), s_.rows, n_), s_.steps,
                     graph ? graph->routes() : ctx_.policy.pass_routes());
  ctx_.stats.decode_steps++;
  ctx_.stats.row_steps += s_.size();
  const bool slot_cols = layout_.can_pause();  // per-slot columns: the slot layout's (a batch shares one column)
  if (any_held) {
    auto moving = s_.paused.logical_not().to(torch::kLong);
    s_.steps += moving;
    s_.cols += moving;
  } else {
    s_.steps += 1;
    if (slot_cols) s_.cols += 1;
  }
  for (int64_t s = 0; s < s_.size(); ++s)
    if (!s_.held[s]) ++s_.step[s], ++s_.col[s];
}

int64_t compacted_pool(int64_t running, int64_t pool, bool bucketed) {
  if (running == 0 || (pool - running) * kCompactEvery < pool) return pool;
  if (!bucketed) return running;
  int64_t bucket = 1;
  while (bucket < running) bucket *= 2;
  return std::min(bucket, pool);
}

void DecodeLoop::run(SampledRows& out) {
  const int64_t sync_every = sync_interval(ctx_.params, stops_.active(), dev_);
  if (ctx_.graph) ctx_.graph->reset();
  layout_.refill(*this);
  for (int64_t steps = 1;; ++steps) {
    sample();
    ctx_.stats.slot_steps += pool_;  // the cache allocated, dropped slots included
    const bool capped = all_capped();
    const bool at_sync = capped || steps % sync_every == 0;
    int64_t running = 1;  // unknown between synchronisation points
    if (at_sync) {
      running = call_hook(release(!capped || turn_tok_ >= 0));  // (a turn token: the host's steps may run ahead)
      if (running == 0 && !layout_.waiting()) break;
      if (plan_stops()) break;  // partial rollouts: the rows not ended are carried to a later call
      if (!layout_.waiting()) compact();
    }
    // The sampled tokens go into the cache, then free slots take waiting rows (their logits come from the prefill).
    if (running > 0) decode();
    if (at_sync) layout_.refill(*this);
  }
  written_.collect(n_, out, first_);
  for (int64_t r = 0; plan_ && r < n_; ++r)
    if (!ended_[r]) out.finish[first_ + r] = Finish::kCarried, ++ctx_.stats.carried_rows;
  if (ctx_.progress.active()) {
    int64_t tokens = 0;
    for (int64_t r = 0; r < n_; ++r) tokens += static_cast<int64_t>(out.ids[first_ + r].size());
    ctx_.progress.batch_done(tokens);
  }
  if (ctx_.graph) ctx_.graph->reset();
}

}  // namespace gspo::rollout
