#include "gspo/rollout/sampler.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>

#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/core/resources.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/decode_graph.h"
#include "gspo/rollout/progress.h"
#include "gspo/rollout/decode_loop.h"
#include "gspo/rollout/route_store.h"
#include "gspo/rollout/slot_hook.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::rollout {

Sampler::Sampler(model::Policy& policy, const tokenizer::Tokenizer& tok, SamplingParams params)
    : policy_(policy), tok_(tok), params_(std::move(params)) {
  // Models often pad their vocabulary past the tokenizer's (Qwen: 151936 rows, 151665 tokens): never sample those.
  if (params_.vocab_limit == 0 && tok_.vocab_size() < policy_.manifest().vocab_size) params_.vocab_limit = tok_.vocab_size();
  // auto leaves an MoE model eager unless its export routes decode steps without reading back to the host (a routing
  // that reads data-dependent shapes cannot be captured; true tries, and warns when the capture fails), and then
  // captures steps of at most its moe_capture_rows rows.
  graph_rows_ = capture_rows(policy_);
  const bool want = params_.cuda_graphs == config::CudaGraphs::kOn ||
                    (params_.cuda_graphs == config::CudaGraphs::kAuto && graph_rows_ > 0);
  if (params_.cuda_graphs == config::CudaGraphs::kOn) graph_rows_ = std::numeric_limits<int64_t>::max();
  if (want && policy_.device().is_cuda()) {
    if (DecodeGraph::available(policy_))
      graph_ = std::make_unique<DecodeGraph>();
    else if (params_.cuda_graphs == config::CudaGraphs::kOn)
      log::warn("rollout.cuda_graphs: the model has no decode_static method (or this build has no CUDA); decoding "
                "eagerly");
    if (DecodeGraph::available_slots(policy_)) slot_graph_ = std::make_unique<DecodeGraph>();
  }
}

Sampler::~Sampler() = default;

int64_t Sampler::capture_rows(const model::Policy& policy) {
  return policy.moe_layers().empty() ? std::numeric_limits<int64_t>::max() : policy.manifest().moe_capture_rows;
}

namespace {

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
void fill_layout(RolloutBatch& out, const at::Tensor& pids, const at::Tensor& pmask, const SampledRows& rows,
                 int64_t pad) {
  const int64_t N = out.num_rows(), P = out.prompt_len, G = out.group_size;
  int64_t Rmax = 0;
  for (const auto& r : out.response_ids) Rmax = std::max<int64_t>(Rmax, r.size());
  out.input_ids = torch::full({N, P + Rmax}, pad, torch::kLong);
  out.attention_mask = torch::zeros({N, P + Rmax}, torch::kLong);
  out.input_ids.narrow(1, 0, P).copy_(pids.repeat_interleave(G, 0));
  out.attention_mask.narrow(1, 0, P).copy_(pmask.repeat_interleave(G, 0));
  out.response_mask = torch::zeros({N, Rmax}, torch::kFloat);
  out.behaviour_logprobs = torch::zeros({N, Rmax}, torch::kFloat);
  out.loss_mask = torch::zeros({N, Rmax}, torch::kFloat);
  auto ia = out.input_ids.accessor<int64_t, 2>();
  auto ma = out.attention_mask.accessor<int64_t, 2>();
  auto ra = out.response_mask.accessor<float, 2>();
  auto ba = out.behaviour_logprobs.accessor<float, 2>();
  auto la = out.loss_mask.accessor<float, 2>();
  out.response_lengths.resize(N);
  for (int64_t r = 0; r < N; ++r) {
    const auto& ids = out.response_ids[r];
    out.response_lengths[r] = static_cast<int64_t>(ids.size());
    for (size_t t = 0; t < ids.size(); ++t) {
      ia[r][P + t] = ids[t];
      ma[r][P + t] = 1;
      ra[r][t] = 1.0f;
      ba[r][t] = rows.logprobs[r][t];
      la[r][t] = rows.own[r][t] ? 1.0f : 0.0f;  // 0 on tokens a slot hook wrote into the response
    }
  }
}

}  // namespace

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
  const int64_t fit = rows_in_budget(budget, row_bytes, rows);
  if (fit < 1)
    throw ConfigError(what + " holds no row of KV cache: one row of " + std::to_string(columns) + " columns (the " +
                      "longest prompt plus max_new_tokens) needs " + mib(row_bytes) + " MiB (" +
                      std::to_string(row_bytes) + " bytes) for this model");
  return fit;
}

void Sampler::run_static(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise,
                         SampledRows& rows, int64_t first, RolloutProgress& progress) {
  auto layout = batch_layout(policy_, prompts, G, params_.max_new_tokens);
  const int64_t n = static_cast<int64_t>(prompts.size()) * G;
  std::unique_ptr<DecodeGraph> eager;  // (an MoE step of more rows than its export routes without the host)
  auto& graph = n > graph_rows_ ? eager : graph_;
  DecodeLoop({policy_, tok_, params_, stats_, progress, graph, hook_}, *layout, noise, n, first).run(rows);
}

void Sampler::run_slots(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise,
                        int64_t slots, int64_t columns, SampledRows& rows, RolloutProgress& progress,
                        const CallPlan* plan, RouteStore* routes) {
  auto layout = slot_layout(policy_, prompts, G, slots, columns, plan);
  const int64_t n = static_cast<int64_t>(prompts.size()) * G;
  // Eager with experts on other ranks (each MoE layer's exchange runs on the host) or an MoE pool of more rows than
  // its export routes without the host. A route record is captured with the layer-by-layer pass (decode_graph.h).
  std::unique_ptr<DecodeGraph> eager;
  auto& graph = policy_.expert_runner() || slots > graph_rows_ ? eager : slot_graph_;
  DecodeLoop({policy_, tok_, params_, stats_, progress, graph, hook_, routes}, *layout, noise, n, 0, plan, G)
      .run(rows);
}

namespace {

// SamplingParams::record_routes: the call's route store, the policy recording while it lives.
struct RouteRecording {
  RouteRecording(model::Policy& policy, int64_t prompts, int64_t rows, int64_t span) : policy(policy) {
    const auto& moe = policy.moe_layers();
    if (moe.empty()) throw std::logic_error("record_routes: the policy has no MoE layers");
    const int64_t top_k = policy.moe_routing(moe.front()).first;
    const int64_t experts = policy.parameter("layers." + std::to_string(moe.front()) + ".mlp.gate.weight").size(0);
    store = std::make_unique<RouteStore>(prompts, rows, span, static_cast<int64_t>(moe.size()), top_k, experts,
                                         policy.device());
    policy.record_routes(true);  // (throws for a model that cannot: before anything is sampled)
  }
  ~RouteRecording() { policy.record_routes(false); }
  model::Policy& policy;
  std::unique_ptr<RouteStore> store;
};

}  // namespace

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
  return run(prompts, G, noise, nullptr);
}

RolloutBatch Sampler::generate(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise,
                               const CallPlan& plan) {
  const int64_t N = static_cast<int64_t>(prompts.size()) * G;
  if (static_cast<int64_t>(plan.rows.size()) != N)
    throw std::invalid_argument("CallPlan: " + std::to_string(plan.rows.size()) + " rows for a call of " +
                                std::to_string(N));
  if (!plan.must_finish.empty() && plan.must_finish.size() != prompts.size())
    throw std::invalid_argument("CallPlan: must_finish needs one flag per prompt");
  for (int64_t r = 0; r < N; ++r) {
    const auto& row = plan.rows[r];
    if (row.ids.size() != row.logprobs.size())
      throw std::invalid_argument("CallPlan: row " + std::to_string(r) + " has tokens and log-probs of other lengths");
    if (row.finish == Finish::kCarried && static_cast<int64_t>(row.ids.size()) >= params_.max_new_tokens)
      throw std::invalid_argument("CallPlan: row " + std::to_string(r) + " continues from " +
                                  std::to_string(row.ids.size()) + " tokens, at or past max_new_tokens");
  }
  if (hook_) throw std::logic_error("partial rollouts do not carry a slot hook's state (multi-turn tools)");
  if (!policy_.has_slots())
    throw ConfigError("partial rollouts continue rows in a slot pool: the model needs the slot methods (re-export it "
                      "with scripts/gspo_model.py)");
  return run(prompts, G, noise, &plan);
}

RolloutBatch Sampler::run(const std::vector<std::vector<int64_t>>& prompts, int64_t G, const NoiseKey& noise,
                          const CallPlan* plan) {
  torch::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  stats_ = {};
  const auto& m = policy_.manifest();
  const int64_t R = params_.max_new_tokens + params_.insert_capacity;  // response positions
  check_prompts(prompts, R, m);
  const int64_t B = static_cast<int64_t>(prompts.size());
  const int64_t N = B * G;
  int64_t P = 0;
  for (const auto& p : prompts) P = std::max<int64_t>(P, p.size());
  const int64_t pad = m.pad_token_id;

  const int64_t slots = budget_rows(N, P + R);
  stats_.slots = slots;
  SampledRows rows(N);
  std::optional<RouteRecording> recording;
  if (params_.record_routes) recording.emplace(policy_, B, N, R);
  if (recording && plan) recording->store->check_carried(*plan, prompts, G);
  {
    RolloutProgress progress(params_.progress, N);
    // A hook with a turn token pauses rows: they need their own cache columns (the slot layout), budget or not.
    const bool turns = hook_ && hook_->turn_token() >= 0;
    if (turns && !policy_.has_append())
      throw ConfigError("multi-turn rollouts append tokens to a running row: the model needs the slot methods with "
                        "append_slots (slot_api 2; re-export it with scripts/gspo_model.py)");
    // A plan's rows start at their own positions: their own cache columns too. Experts on other ranks
    // (model/expert_runner.h): the slot methods are what runs one layer at a time.
    const bool experts_elsewhere = policy_.expert_runner() != nullptr;
    const bool live_keys = policy_.device().is_cuda() && policy_.slot_api() >= 3;
    switch (turns || plan || experts_elsewhere || recording ? Schedule::kSlotPool
                                               : schedule_for(N, slots, params_.continuous, policy_.has_slots(), live_keys)) {
      case Schedule::kAllRows: run_static(prompts, G, noise, rows, 0, progress); break;
      case Schedule::kSlotPool:
        run_slots(prompts, G, noise, slots, P + R, rows, progress, plan, recording ? recording->store.get() : nullptr);
        break;
      case Schedule::kStaticBatches: run_batches(prompts, G, noise, slots, rows, progress); break;
    }
  }

  RolloutBatch batch;
  batch.prompt_len = P;
  batch.group_size = G;
  batch.finish = rows.finish;
  batch.response_ids = std::move(rows.ids);
  batch.response_text.resize(N);
  for (int64_t r = 0; r < N; ++r) {
    const auto& t = batch.response_ids[r];
    const bool eos_last = !t.empty() && (model::is_eos(policy_.manifest(), t.back()) || t.back() == tok_.eos_id());
    batch.response_text[r] = tok_.decode(std::vector<int64_t>(t.begin(), t.end() - (eos_last ? 1 : 0)));
  }
  auto [pids, pmask] = left_pad(prompts, P, pad);
  fill_layout(batch, pids, pmask, rows, pad);
  if (recording) batch.routes = recording->store->layout(G, P, batch.input_ids.size(1) - P, plan);
  stats_.busy_slot_steps = batch.generated_tokens();
  if (plan)  // the rows' tokens so far were sampled by an earlier call
    for (const auto& r : plan->rows) stats_.busy_slot_steps -= static_cast<int64_t>(r.ids.size());
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return batch;
}

}  // namespace gspo::rollout
