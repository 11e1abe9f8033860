// The metrics line of one rollout step. With several ranks, per-row figures are all-gathered (so rank 0 reports
// the global batch exactly as one process would) and the update's sums, minima and maxima are all-reduced.
#include <chrono>
#include <cmath>

#include "gspo/core/resources.h"
#include "gspo/dist/comm.h"
#include "gspo/dist/sharded_adamw.h"
#include "gspo/train/state.h"

namespace gspo::train {
namespace {

void add_stats(nlohmann::ordered_json& m, const std::string& name, const std::vector<double>& v, bool with_std) {
  double sum = 0, mn = v.empty() ? 0 : v[0], mx = mn;
  for (auto x : v) {
    sum += x;
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  }
  const double mean = v.empty() ? 0 : sum / static_cast<double>(v.size());
  m[name + "_mean"] = mean;
  if (with_std) {
    double var = 0;
    for (auto x : v) var += (x - mean) * (x - mean);
    m[name + "_std"] = v.empty() ? 0 : std::sqrt(var / static_cast<double>(v.size()));
  }
  m[name + "_min"] = mn;
  m[name + "_max"] = mx;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// Per-row columns gathered over the ranks (rank order = global row order).
void gather_rows(dist::Comm& comm, StepRecord& r) {
  if (comm.world_size() == 1) return;
  std::vector<std::vector<double>*> cols{&r.rewards, &r.correct, &r.advantages, &r.response_lengths, &r.truncated};
  const int64_t n = static_cast<int64_t>(r.rewards.size());
  auto t = torch::empty({n, static_cast<int64_t>(cols.size())}, torch::kDouble);
  auto ta = t.accessor<double, 2>();  // element writes through the accessor, not one indexing op each
  for (size_t c = 0; c < cols.size(); ++c)
    for (int64_t i = 0; i < n; ++i) ta[i][static_cast<int64_t>(c)] = (*cols[c])[i];
  auto all = comm.all_gather(t).contiguous();
  auto a = all.accessor<double, 2>();
  for (size_t c = 0; c < cols.size(); ++c) {
    cols[c]->assign(all.size(0), 0.0);
    for (int64_t i = 0; i < all.size(0); ++i) (*cols[c])[i] = a[i][c];
  }
}

// Sums and extrema of the update over the ranks.
void reduce_update(dist::Comm& comm, StepRecord& r) {
  if (comm.world_size() == 1) return;
  auto& u = r.update;
  auto& L = u.loss;
  std::vector<double*> sums{&u.loss_sum, &u.entropy_sum, &L.sequences, &L.tokens, &L.seq_ratio_sum,
                            &L.seq_clipped_low, &L.seq_clipped_high, &L.tok_clipped_low, &L.tok_clipped_high,
                            &L.kl_sum, &L.policy_loss_sum};
  std::vector<int64_t*> counts{&u.train_tokens, &r.prompts, &r.zero_variance, &r.generated_tokens};
  auto t = torch::empty({static_cast<int64_t>(sums.size() + counts.size())}, torch::kDouble);
  for (size_t i = 0; i < sums.size(); ++i) t[i] = *sums[i];
  for (size_t i = 0; i < counts.size(); ++i) t[sums.size() + i] = static_cast<double>(*counts[i]);
  comm.all_reduce(t);
  for (size_t i = 0; i < sums.size(); ++i) *sums[i] = t[i].item<double>();
  for (size_t i = 0; i < counts.size(); ++i) *counts[i] = std::llround(t[sums.size() + i].item<double>());
  auto mx = torch::tensor({L.seq_ratio_max, -L.seq_ratio_min, u.first_mb_ratio_dev}, torch::kDouble);
  comm.all_reduce(mx, dist::ReduceOp::kMax);
  L.seq_ratio_max = mx[0].item<double>();
  L.seq_ratio_min = -mx[1].item<double>();
  u.first_mb_ratio_dev = mx[2].item<double>();
}

// Bytes of AdamW moments this rank holds, read off the optimizer's own tensors.
int64_t optimizer_state_bytes(const Trainer::State& s) {
  if (s.zero) return s.zero->state_bytes();
  int64_t bytes = 0;
  for (const auto& kv : s.optimizer->state()) {
    const auto& st = static_cast<const torch::optim::AdamWParamState&>(*kv.second);
    for (const auto& t : {st.exp_avg(), st.exp_avg_sq(), st.max_exp_avg_sq()})
      if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  }
  return bytes;
}

// MoE models: per MoE layer, max expert share / mean share of the last training forward (1 = perfectly balanced).
void add_expert_load(nlohmann::ordered_json& m, model::Policy& policy) {
  std::vector<double> imbalance;
  for (const auto& load : policy.expert_load()) {
    if (load.numel() == 0) continue;
    imbalance.push_back(load.max().item<double>() * static_cast<double>(load.numel()));
  }
  if (imbalance.empty()) return;
  m["moe_load_imbalance"] = imbalance;
  m["moe_load_imbalance_max"] = *std::max_element(imbalance.begin(), imbalance.end());
}

}  // namespace

nlohmann::ordered_json step_metrics(Trainer::State& s, StepRecord& r, std::chrono::steady_clock::time_point t_step) {
  auto& comm = *s.comm;
  gather_rows(comm, r);
  reduce_update(comm, r);
  const double rss_mb = comm.max(static_cast<double>(core::peak_rss_bytes()) / (1024.0 * 1024.0));
  const auto counters = comm.take_counters();
  const double t_total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_step).count();

  nlohmann::ordered_json m;
  m["step"] = s.step;
  m["epoch"] = s.cursor->epoch();
  add_stats(m, "reward", r.rewards, true);
  double acc = 0;
  for (double x : r.correct) acc += x;
  m["accuracy"] = ratio(acc, static_cast<double>(r.correct.size()));
  add_stats(m, "advantage", r.advantages, true);
  m["zero_variance_frac"] = ratio(static_cast<double>(r.zero_variance), static_cast<double>(r.prompts));
  m["update_sequences"] = r.update_rows;
  add_stats(m, "response_len", r.response_lengths, false);
  double truncated = 0;
  for (double x : r.truncated) truncated += x;
  m["truncated_frac"] = ratio(truncated, static_cast<double>(r.truncated.size()));
  const auto& u = r.update;
  const auto& L = u.loss;
  m["seq_ratio_mean"] = ratio(L.seq_ratio_sum, L.sequences);
  m["seq_ratio_min"] = L.sequences > 0 ? L.seq_ratio_min : 0.0;
  m["seq_ratio_max"] = L.sequences > 0 ? L.seq_ratio_max : 0.0;
  m["first_minibatch_ratio_dev"] = u.first_mb_ratio_dev;
  m["clip_seq_low"] = ratio(L.seq_clipped_low, L.sequences);
  m["clip_seq_high"] = ratio(L.seq_clipped_high, L.sequences);
  m["clip_tok_low"] = ratio(L.tok_clipped_low, L.tokens);
  m["clip_tok_high"] = ratio(L.tok_clipped_high, L.tokens);
  m["clip_tok_frac"] = ratio(L.tok_clipped_low + L.tok_clipped_high, L.tokens);
  m["loss"] = ratio(u.loss_sum, L.sequences);
  if (s.cfg.algorithm.kl_coef > 0) m["kl"] = ratio(L.kl_sum, L.sequences);
  m["entropy"] = ratio(u.entropy_sum, L.tokens);
  m["grad_norm"] = ratio(u.grad_norm_sum, static_cast<double>(u.updates));
  m["grad_norm_max"] = u.grad_norm_max;
  m["lr"] = u.lr;
  m["optimizer_steps"] = s.optimizer_steps;
  m["skipped_updates"] = u.skipped;
  m["time_sample_s"] = r.t_sample;
  m["time_reward_s"] = r.t_reward;
  m["time_old_logprobs_s"] = r.t_old;
  m["time_update_s"] = r.t_update;
  m["time_step_s"] = t_total;
  m["sample_tokens"] = r.generated_tokens;
  // Throughput of the whole job: tokens of every rank over this rank's wall time.
  m["sample_tokens_per_s"] = ratio(static_cast<double>(r.generated_tokens), r.t_sample);
  m["train_tokens_per_s"] = ratio(static_cast<double>(u.train_tokens), r.t_update);
  m["peak_rss_mb"] = rss_mb;
  if (s.policy->device().is_cuda())
    m["peak_gpu_mb"] = comm.max(static_cast<double>(core::peak_device_bytes(s.policy->device())) / (1024.0 * 1024.0));
  m["world_size"] = comm.world_size();
  if (comm.world_size() > 1) {
    m["time_comm_s"] = counters.seconds;
    m["comm_frac"] = ratio(counters.seconds, t_total);
    m["comm_mb"] = counters.bytes / (1024.0 * 1024.0);
    m["comm_calls"] = counters.calls;
  }
  m["optimizer_state_mb_per_rank"] = static_cast<double>(optimizer_state_bytes(s)) / (1024.0 * 1024.0);
  add_expert_load(m, *s.policy);
  return m;
}

}  // namespace gspo::train
