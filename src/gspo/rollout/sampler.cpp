#include "gspo/rollout/sampler.h"

#include <torch/torch.h>

#include <chrono>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/stop_matcher.h"
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

int64_t RolloutBatch::generated_tokens() const {
  int64_t n = 0;
  for (auto l : response_lengths) n += l;
  return n;
}

Sampler::Sampler(model::Policy& policy, const tokenizer::Tokenizer& tok, SamplingParams params)
    : policy_(policy), tok_(tok), params_(std::move(params)) {
  // Models often pad their vocabulary past the tokenizer's (Qwen: 151936 rows, 151665 tokens): never sample those.
  if (params_.vocab_limit == 0 && tok_.vocab_size() < policy_.manifest().vocab_size) params_.vocab_limit = tok_.vocab_size();
}

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
}

}  // namespace

void Sampler::compact(at::Tensor& cache, at::Tensor& live_mask, std::vector<int64_t>& rows,
                      std::vector<char>& done_in_cache) {
  const int64_t dead = std::count(done_in_cache.begin(), done_in_cache.end(), 1);
  if (dead == 0 || dead * 4 < static_cast<int64_t>(rows.size())) return;
  std::vector<int64_t> keep, new_rows;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!done_in_cache[i]) {
      keep.push_back(static_cast<int64_t>(i));
      new_rows.push_back(rows[i]);
    }
  auto idx = torch::tensor(keep, torch::kLong).to(policy_.device());
  cache = policy_.reorder_cache(cache, idx);
  live_mask = live_mask.index_select(0, idx);
  rows = std::move(new_rows);
  done_in_cache.assign(rows.size(), 0);
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
  const auto dev = policy_.device();

  // Prefill each distinct prompt once, then expand the cache to its G samples.
  auto [pids, pmask] = left_pad(prompts, P, pad);
  auto cache = policy_.init_cache(B, P + R);
  auto logits = policy_.prefill(pids.to(dev), pmask.to(dev), cache);
  if (G > 1) {  // one copy of the cache; skipped when there is nothing to fan out
    auto expand = torch::arange(B, torch::kLong).repeat_interleave(G).to(dev);
    cache = policy_.reorder_cache(cache, expand);
    logits = logits.index_select(0, expand);
  }

  // live_* hold the rows still in the cache, in cache order; rows[i] = batch row of cache row i.
  auto live_mask = torch::zeros({N, P + R}, torch::kLong);
  live_mask.narrow(1, 0, P).copy_(pmask.repeat_interleave(G, 0));
  live_mask = live_mask.to(dev);
  std::vector<int64_t> rows(N);
  for (int64_t i = 0; i < N; ++i) rows[i] = i;
  std::vector<char> done_in_cache(N, 0);  // cache row finished but not yet dropped

  RolloutBatch out;
  out.prompt_len = P;
  out.group_size = G;
  out.finish.assign(N, Finish::kLength);
  out.response_ids.assign(N, {});
  std::vector<std::vector<float>> logps(N);
  StopMatcher stops(params_.stop, tok_);
  std::vector<std::string> text(N);
  int64_t alive = N;

  for (int64_t step = 0; step < R && alive > 0; ++step) {
    if (step > 0) {
      auto col = torch::full({static_cast<int64_t>(rows.size()), 1}, pad, torch::kLong);
      auto ca = col.accessor<int64_t, 2>();
      for (size_t i = 0; i < rows.size(); ++i)
        if (!done_in_cache[i]) ca[i][0] = out.response_ids[rows[i]].back();
      logits = policy_.decode(col.to(dev), live_mask.narrow(1, 0, P + step), cache, P + step - 1);
      stats_.decode_steps++;
      stats_.row_steps += static_cast<int64_t>(rows.size());
    }
    Draw d = sample_next(logits, params_, row_uniforms(noise, rows, step));
    auto tokens = d.tokens.to(torch::kCPU);
    auto lps = d.logprobs.to(torch::kCPU);
    auto ta = tokens.accessor<int64_t, 1>();
    auto la = lps.accessor<float, 1>();
    auto new_col = torch::zeros({static_cast<int64_t>(rows.size())}, torch::kLong);
    auto na = new_col.accessor<int64_t, 1>();
    for (size_t i = 0; i < rows.size(); ++i) {
      if (done_in_cache[i]) continue;
      const int64_t r = rows[i];
      const int64_t tok = ta[i];
      out.response_ids[r].push_back(tok);
      logps[r].push_back(la[i]);
      na[i] = 1;
      bool end = false;
      if (tok == m.eos_token_id) {
        out.finish[r] = Finish::kEos;
        end = true;
      } else if (stops.active() && stops.append_and_match(text[r], tok)) {
        out.finish[r] = Finish::kStop;
        end = true;
      }
      if (end) {
        done_in_cache[i] = 1;
        --alive;
      }
    }
    live_mask.select(1, P + step).copy_(new_col.to(dev));
    // Drop finished rows from the cache once they are a quarter of it (each drop copies the cache once).
    if (alive > 0) compact(cache, live_mask, rows, done_in_cache);
  }

  fill_layout(out, pids, pmask, logps, pad);
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace gspo::rollout
