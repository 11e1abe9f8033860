#include "gspo/rollout/sampler.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/decode_graph.h"
#include "gspo/rollout/progress.h"
#include "gspo/rollout/slot_engine.h"
#include "gspo/rollout/stop_matcher.h"
#include "gspo/rollout/written.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::rollout {

const char* finish_name(Finish f) {
  switch (f) {
    case Finish::kEos: return "eos";
    case Finish::kStop: return "stop";
    case Finish::kLength: return "length";
  }
  return "?";
}

std::vector<int64_t> RolloutBatch::trained_tokens() const {
  auto sums = loss_mask.sum(1).to(torch::kLong).contiguous();
  return {sums.data_ptr<int64_t>(), sums.data_ptr<int64_t>() + sums.numel()};
}

int64_t RolloutBatch::generated_tokens() const {
  int64_t n = 0;
  for (auto l : response_lengths) n += l;
  return n;
}

Sampler::Sampler(model::Policy& policy, const tokenizer::Tokenizer& tok, SamplingParams params)
    : policy_(policy), tok_(tok), params_(std::move(params)) {
  // Models often pad their vocabulary past the tokenizer's (Qwen: 151936 rows, 151665 tokens): never sample those.
  if (params_.vocab_limit == 0 && tok_.vocab_size() < policy_.manifest().vocab_size) params_.vocab_limit = tok_.vocab_size();
  if (params_.cuda_graphs && policy_.device().is_cuda()) {
    if (DecodeGraph::available(policy_))
      graph_ = std::make_unique<DecodeGraph>();
    else
      log::warn("rollout.cuda_graphs: the model has no decode_static method (or this build has no CUDA); decoding "
                "eagerly");
    if (DecodeGraph::available_slots(policy_)) slot_graph_ = std::make_unique<DecodeGraph>();
  }
}

Sampler::~Sampler() = default;

namespace {

// Left-pads prompts into [B, P] ids and mask.
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

// Bytes as MiB with up to 3 significant decimals ("0.25", "1024").
std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

void check_prompts(const std::vector<std::vector<int64_t>>& prompts, int64_t max_new, const model::Manifest& m) {
  if (prompts.empty()) throw DataError("no prompts to sample from");
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    if (p.empty()) throw DataError("prompt " + std::to_string(i) + " is empty (no tokens)");
    for (int64_t id : p)
      if (id < 0 || id >= m.vocab_size)
        throw DataError("prompt " + std::to_string(i) + " has token id " + std::to_string(id) +
                        " outside the model's vocabulary [0, " + std::to_string(m.vocab_size) + ")");
    if (static_cast<int64_t>(p.size()) + max_new > m.max_seq_len)
      throw DataError("prompt " + std::to_string(i) + " has " + std::to_string(p.size()) + " tokens; with " +
                      "max_new_tokens " + std::to_string(max_new) + " that exceeds the model's max_seq_len " +
                      std::to_string(m.max_seq_len));
  }
}

// Fills the padded training layout of `out` from its unpadded responses: prompts (left-padded, P columns) then
// responses right-padded to the longest one.
void fill_layout(RolloutBatch& out, const at::Tensor& pids, const at::Tensor& pmask,
                 const std::vector<std::vector<float>>& logps, int64_t pad) {
  const int64_t N = out.num_rows(), P = out.prompt_len, G = out.group_size;
  int64_t Rmax = 0;
  for (const auto& r : out.response_ids) Rmax = std::max<int64_t>(Rmax, r.size());
  out.input_ids = torch::full({N, P + Rmax}, pad, torch::kLong);
  out.attention_mask = torch::zeros({N, P + Rmax}, torch::kLong);
  out.input_ids.narrow(1, 0, P).copy_(pids.repeat_interleave(G, 0));
  out.attention_mask.narrow(1, 0, P).copy_(pmask.repeat_interleave(G, 0));
  out.response_mask = torch::zeros({N, Rmax}, torch::kFloat);
  out.behaviour_logprobs = torch::zeros({N, Rmax}, torch::kFloat);
  auto ia = out.input_ids.accessor<int64_t, 2>();
  auto ma = out.attention_mask.accessor<int64_t, 2>();
  auto ra = out.response_mask.accessor<float, 2>();
  auto ba = out.behaviour_logprobs.accessor<float, 2>();
  out.response_lengths.resize(N);
  for (int64_t r = 0; r < N; ++r) {
    const auto& ids = out.response_ids[r];
    out.response_lengths[r] = static_cast<int64_t>(ids.size());
    for (size_t t = 0; t < ids.size(); ++t) {
      ia[r][P + t] = ids[t];
      ma[r][P + t] = 1;
      ra[r][t] = 1.0f;
      ba[r][t] = logps[r][t];
    }
  }
  out.loss_mask = out.response_mask.clone();  // every response token is the model's own (no tool writes yet)
}

}  // namespace

// The rows still in the KV cache, in cache order. Their per-step state lives on the model's device so a decode
// step needs no host round trip; `rows_host` mirrors `rows` and changes only when the cache is compacted.
struct Live {
  std::vector<int64_t> rows_host;
  at::Tensor rows;  // [L] int64: batch row of each cache row
  at::Tensor done;  // [L] bool: finished (its cache row is dead until the next compaction)
  at::Tensor next;  // [L, 1] int64: the next decode input (pad for finished rows)
  at::Tensor mask;  // [L, P + R] int64 attention mask
};

namespace {
constexpr int64_t kHostSyncEveryGpu = 8;  // GPU: steps between host reads of the finished flags (and compaction)
}  // namespace

// Drops finished rows from the cache once they are a quarter of it (each drop copies the cache once). Returns the
// number of rows still running. Reads `done` on the host: the loop's read at the sync interval.
int64_t Sampler::sync_and_compact(at::Tensor& cache, Live& live) {
  ++stats_.host_transfers;
  auto done = live.done.to(torch::kCPU);
  const auto* d = done.data_ptr<bool>();
  const int64_t L = done.numel();
  const int64_t dead = std::count(d, d + L, true);
  if (dead == 0 || dead == L || dead * 4 < L) return L - dead;
  std::vector<int64_t> keep, rows;
  for (int64_t i = 0; i < L; ++i)
    if (!d[i]) {
      keep.push_back(i);
      rows.push_back(live.rows_host[i]);
    }
  auto idx = torch::tensor(keep, torch::kLong).to(policy_.device());
  ++stats_.host_transfers;
  ++stats_.refill_transfers;  // a compaction's
  cache = policy_.reorder_cache(cache, idx);
  live.mask = live.mask.index_select(0, idx);
  live.rows = live.rows.index_select(0, idx);
  live.next = live.next.index_select(0, idx);
  live.done = live.done.index_select(0, idx);
  live.rows_host = std::move(rows);
  if (graph_) graph_->reset();  // the graph was captured for the old cache tensor
  return L - dead;
}

// Records one sampled column: tokens and log-probs of the running rows, lengths, EOS, the mask column, the next
// decode input. Stop strings need the text, so with stop strings the tokens come to the host every step. Column
// `step` makes every running response step + 1 tokens long (all rows advance together), so min_new_tokens is one
// test per step: stop strings are matched from the token that makes the response min_new_tokens long (vLLM's rule).
void Sampler::record(const Draw& draw, Live& live, Written& out, StopMatcher& stops, std::vector<std::string>& text,
                     int64_t col, int64_t step) {
  const auto& m = policy_.manifest();
  auto active = live.done.logical_not();
  out.tokens.select(1, step).index_copy_(0, live.rows, torch::where(active, draw.tokens, m.pad_token_id));
  out.logprobs.select(1, step).index_copy_(0, live.rows, torch::where(active, draw.logprobs, 0.0));
  out.length.index_add_(0, live.rows, active.to(torch::kLong));
  auto eos = active.logical_and(draw.tokens == m.eos_token_id);
  auto finish = out.finish.index_select(0, live.rows);
  finish = torch::where(eos, static_cast<int64_t>(Finish::kEos), finish);
  live.mask.select(1, col).copy_(active.to(torch::kLong));
  auto ended = eos;
  if (stops.active()) {
    std::vector<std::string*> texts;
    for (auto r : live.rows_host) texts.push_back(&text[r]);
    const std::vector<bool> check(texts.size(), step + 1 >= params_.min_new_tokens);
    auto stopped = stops.advance(draw.tokens, active, m.eos_token_id, texts, check).to(live.done.device());
    stats_.host_transfers += 2;  // the tokens (inactive rows marked) to the host, the stop flags back
    finish = torch::where(stopped, static_cast<int64_t>(Finish::kStop), finish);
    ended = ended.logical_or(stopped);
  }
  out.finish.index_copy_(0, live.rows, finish);
  live.done = live.done.logical_or(ended);
  live.next = torch::where(live.done, m.pad_token_id, draw.tokens).unsqueeze(1);
}

// One decode step: ids live.next at column `start`. Eager through decode(), or through a CUDA graph of decode_static
// when one is enabled (captured on first use for the current cache; a failed capture switches the sampler to eager
// for good, with one warning).
at::Tensor Sampler::decode_step(const Live& live, at::Tensor& cache, int64_t start) {
  if (graph_) {
    if (!graph_->ready()) {
      if (graph_->capture(policy_, cache, live.next, live.mask, start)) {
        stats_.graph_captures++;
      } else {
        log::warn("rollout.cuda_graphs: capture failed ({}); decoding eagerly", graph_->last_error().substr(0, 300));
        graph_.reset();
      }
    }
    if (graph_) return graph_->replay(live.next, live.mask, start);
  }
  return policy_.decode(live.next, live.mask.narrow(1, 0, start + 1), cache, start);
}

int64_t Sampler::budget_rows(int64_t rows, int64_t columns) {
  if (params_.kv_cache_bytes <= 0 && params_.kv_cache_fraction <= 0) return rows;
  // One row's bytes from caches of 1 and 2 columns (a cache grows linearly with its columns): measuring on a full row
  // would allocate it (GBs at 8k+ columns of a large model) on every call.
  const int64_t one = policy_.init_cache(1, 1).nbytes(), two = policy_.init_cache(1, 2).nbytes();
  const int64_t row_bytes = one + (two - one) * (columns - 1);
  std::string what;
  int64_t budget = 0;
  if (params_.kv_cache_fraction > 0) {
    if (!policy_.device().is_cuda())
      throw ConfigError("rollout.kv_cache_fraction: needs a CUDA device (the model is on " + policy_.device().str() +
                        "); on the CPU set " + params_.kv_budget_key + " instead");
    const int64_t avail = core::available_device_bytes(policy_.device());
    budget = static_cast<int64_t>(params_.kv_cache_fraction * static_cast<double>(avail));
    what = "rollout.kv_cache_fraction: " + std::to_string(params_.kv_cache_fraction) + " of the " +
           mib(avail) + " MiB available on " + policy_.device().str() + " (" + mib(budget) + " MiB)";
  } else {
    budget = params_.kv_cache_bytes;
    what = params_.kv_budget_key + ": " + mib(budget) + " MiB";
  }
  const int64_t fit = budget / std::max<int64_t>(row_bytes, 1);
  if (fit < 1)
    throw ConfigError(what + " holds no row of KV cache: one row of " + std::to_string(columns) + " columns (the " +
                      "longest prompt plus max_new_tokens) needs " + mib(row_bytes) + " MiB (" +
                      std::to_string(row_bytes) + " bytes) for this model");
  return std::min(rows, fit);
}

void Sampler::run_static(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise,
                         SampledRows& rows, int64_t first, RolloutProgress& progress) {
  const auto& m = policy_.manifest();
  const int64_t R = params_.max_new_tokens;
  const int64_t B = static_cast<int64_t>(prompts.size());
  const int64_t N = B * G;
  int64_t P = 0;
  for (const auto& p : prompts) P = std::max<int64_t>(P, p.size());
  const int64_t pad = m.pad_token_id;
  const auto dev = policy_.device();

  // Prefill each distinct prompt once, then expand the cache to its G samples.
  auto [pids, pmask] = left_pad(prompts, P, pad);
  if (graph_) graph_->reset();
  auto cache = policy_.init_cache(B, P + R);
  auto logits = policy_.prefill(pids.to(dev), pmask.to(dev), cache);
  stats_.prefill_tokens += B * P;
  if (G > 1) {  // one copy of the cache; skipped when there is nothing to fan out
    auto expand = torch::arange(B, torch::kLong).repeat_interleave(G).to(dev);
    cache = policy_.reorder_cache(cache, expand);
    logits = logits.index_select(0, expand);
  }
  stats_.kv_bytes = std::max<int64_t>(stats_.kv_bytes, cache.nbytes());

  auto on_dev = torch::TensorOptions().device(dev);
  Live live;
  live.rows_host.resize(N);
  for (int64_t i = 0; i < N; ++i) live.rows_host[i] = i;
  live.rows = torch::arange(N, on_dev.dtype(torch::kLong));
  live.done = torch::zeros({N}, on_dev.dtype(torch::kBool));
  live.mask = torch::zeros({N, P + R}, torch::kLong);
  live.mask.narrow(1, 0, P).copy_(pmask.repeat_interleave(G, 0));
  live.mask = live.mask.to(dev);
  Written out(N, R, pad, dev);
  StopMatcher stops(params_.stop, tok_);
  std::vector<std::string> text(N);
  // On the CPU a host sync costs nothing; with stop strings the tokens come to the host every step anyway.
  const int64_t host_sync_every = stops.active()                ? 1
                                  : params_.host_sync_every > 0 ? params_.host_sync_every
                                  : dev.is_cpu()                ? 1
                                                                : kHostSyncEveryGpu;

  for (int64_t step = 0; step < R; ++step) {
    if (step > 0) {
      logits = decode_step(live, cache, P + step - 1);
      stats_.decode_steps++;
      stats_.row_steps += static_cast<int64_t>(live.rows_host.size());
    }
    auto u = dev.is_cpu() ? row_uniforms(noise, live.rows_host, step) : row_uniforms(noise, live.rows, step);
    const int64_t banned = step < params_.min_new_tokens ? m.eos_token_id : -1;  // EOS would end it short
    record(sample_next(logits, params_, u, banned), live, out, stops, text, P + step, step);
    stats_.slot_steps += N;  // the rows this cache was allocated for, dropped finished rows included
    if ((step + 1) % host_sync_every == 0 && step + 1 < R) {
      ++stats_.host_syncs;
      const int64_t running = sync_and_compact(cache, live);
      if (progress.active()) {
        ++stats_.host_transfers;
        progress.update(first + N - running, out.length.sum().item<int64_t>());
      }
      if (running == 0) break;
    }
  }
  out.collect(N, rows, first);
  if (progress.active()) progress.batch_done(out.length.sum().item<int64_t>());
}

void Sampler::run_batches(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise,
                          int64_t slots, SampledRows& rows, RolloutProgress& progress) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  if (slots >= G) {  // whole groups, slots / G prompts a batch
    const int64_t per = slots / G;
    for (int64_t b = 0; b < B; b += per) {
      const int64_t n = std::min(per, B - b);
      std::vector<std::vector<int64_t>> part(prompts.begin() + b, prompts.begin() + b + n);
      run_static(part, G, {noise.seed, noise.first_row + b * G}, rows, b * G, progress);
    }
    return;
  }
  for (int64_t b = 0; b < B; ++b)  // a group split into batches of `slots` samples of its prompt
    for (int64_t g = 0; g < G; g += slots) {
      const int64_t n = std::min(slots, G - g);
      run_static({prompts[b]}, n, {noise.seed, noise.first_row + b * G + g}, rows, b * G + g, progress);
    }
}

RolloutBatch Sampler::generate(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise) {
  torch::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  stats_ = {};
  const auto& m = policy_.manifest();
  const int64_t R = params_.max_new_tokens;
  check_prompts(prompts, R, m);
  const int64_t B = static_cast<int64_t>(prompts.size());
  const int64_t N = B * G;
  int64_t P = 0;
  for (const auto& p : prompts) P = std::max<int64_t>(P, p.size());
  const int64_t pad = m.pad_token_id;

  const int64_t slots = budget_rows(N, P + R);
  stats_.slots = slots;
  SampledRows rows(N);
  {
    RolloutProgress progress(params_.progress, N);
    if (slots >= N)
      run_static(prompts, G, noise, rows, 0, progress);
    else if (params_.continuous && policy_.has_slots())
      run_slots(policy_, tok_, params_, stats_, progress, slot_graph_, prompts, G, noise, slots, P + R, rows);
    else
      run_batches(prompts, G, noise, slots, rows, progress);
  }

  RolloutBatch batch;
  batch.prompt_len = P;
  batch.group_size = G;
  batch.finish = rows.finish;
  batch.response_ids = std::move(rows.ids);
  batch.response_text.resize(N);
  for (int64_t r = 0; r < N; ++r) {
    const auto& t = batch.response_ids[r];
    const bool eos_last = !t.empty() && t.back() == tok_.eos_id();
    batch.response_text[r] = tok_.decode(std::vector<int64_t>(t.begin(), t.end() - (eos_last ? 1 : 0)));
  }
  auto [pids, pmask] = left_pad(prompts, P, pad);
  fill_layout(batch, pids, pmask, rows.logprobs, pad);
  stats_.busy_slot_steps = batch.generated_tokens();
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return batch;
}

}  // namespace gspo::rollout
