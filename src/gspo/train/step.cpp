// One rollout step of the loop: sample B x G responses, score them, compute group advantages, then take one
// optimizer step per mini-batch (gradients accumulated over micro-batches).
#include <chrono>
#include <cmath>

#include "gspo/core/error.h"
#include "gspo/core/torch_compat.h"
#include "gspo/data/example.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/schedule.h"
#include "gspo/train/state.h"

namespace gspo::train {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Scored {
  std::vector<double> rewards;
  std::vector<char> correct;
};

Scored score_batch(Trainer::State& s, const rollout::RolloutBatch& b, const std::vector<const data::Example*>& exs) {
  Scored out;
  const int64_t G = b.group_size;
  std::vector<std::string> texts;
  std::vector<const data::Example*> per_row;
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    auto ids = b.response_ids[r];
    if (!ids.empty() && ids.back() == s.tok->eos_id()) ids.pop_back();
    texts.push_back(s.tok->decode(ids));
    per_row.push_back(exs[r / G]);
  }
  for (const auto& sc : reward::score_all(*s.verifier, texts, per_row, s.cfg.reward.workers)) {
    out.rewards.push_back(sc.reward);
    out.correct.push_back(sc.correct);
  }
  return out;
}

// Rows that take part in the update after the optional filters.
std::vector<int64_t> select_rows(const Trainer::State& s, const rollout::RolloutBatch& b, const algo::Advantages& adv) {
  std::vector<int64_t> rows;
  auto zv = adv.zero_variance.accessor<bool, 1>();
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    if (s.cfg.algorithm.filter_zero_variance && zv[r / b.group_size]) continue;
    if (s.cfg.algorithm.filter_truncated && b.finish[r] == rollout::Finish::kLength) continue;
    rows.push_back(r);
  }
  return rows;
}

struct UpdateStats {
  algo::LossStats loss;
  double loss_sum = 0;       // sum over sequences of the per-sequence loss (policy + KL)
  double entropy_sum = 0;    // over response tokens
  double grad_norm_sum = 0, grad_norm_max = 0;
  int64_t updates = 0, skipped = 0;
  int64_t train_tokens = 0;
  double lr = 0;
  double first_mb_ratio_dev = 0;  // max |s_i - 1| in the first mini-batch
};

void fill_old_logprobs(Trainer::State& s, std::vector<std::vector<Micro>>& plan, int64_t P, double temp) {
  torch::NoGradGuard g;
  const bool recompute = s.cfg.algorithm.old_logprobs == "recompute";
  for (auto& mb : plan)
    for (auto& m : mb) {
      m.old_lp = recompute ? response_logprobs(*s.policy, m.ids, m.mask, P, temp, false).logprobs : m.behaviour_lp;
      if (s.reference) m.ref_lp = response_logprobs(*s.reference, m.ids, m.mask, P, temp, false).logprobs;
    }
}

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

[[noreturn]] void nonfinite(const Trainer::State& s, size_t mb, const std::string& what) {
  throw TrainingError("step " + std::to_string(s.step + 1) + ", mini-batch " + std::to_string(mb + 1) + ": non-finite " +
                      what + "; stopped before applying it (nothing was saved from this step; the last checkpoint "
                      "is intact). Lower optimizer.lr, or set train.on_nonfinite: skip to drop such updates");
}

UpdateStats update(Trainer::State& s, std::vector<std::vector<Micro>>& plan, int64_t P, double temp) {
  UpdateStats u;
  auto params = s.policy->parameters();
  const double max_norm = s.cfg.optimizer.grad_clip > 0 ? s.cfg.optimizer.grad_clip : INFINITY;
  for (size_t k = 0; k < plan.size(); ++k) {
    s.optimizer->zero_grad();
    int64_t mb_rows = 0;
    for (const auto& m : plan[k]) mb_rows += static_cast<int64_t>(m.rows.size());
    std::string bad;
    algo::LossStats mb_stats;
    for (auto& m : plan[k]) {
      auto tl = response_logprobs(*s.policy, m.ids, m.mask, P, temp, true);
      auto res = algo::policy_loss({tl.logprobs, m.old_lp, m.resp_mask, m.advantages, m.ref_lp}, s.loss_opts);
      const double lv = res.loss.item<double>();
      if (!std::isfinite(lv)) {
        bad = "loss (" + std::to_string(lv) + ")";
        break;
      }
      (res.loss * (static_cast<double>(m.rows.size()) / static_cast<double>(mb_rows))).backward();
      mb_stats.add(res.stats);
      u.loss_sum += lv * static_cast<double>(m.rows.size());
      u.entropy_sum += (tl.entropy * m.resp_mask).sum().item<double>();
      u.train_tokens += m.real_tokens;
    }
    double gnorm = 0;
    if (bad.empty()) {
      gnorm = torch::nn::utils::clip_grad_norm_(params, max_norm);
      if (!std::isfinite(gnorm)) bad = "gradient norm (" + std::to_string(gnorm) + ")";
    }
    if (!bad.empty()) {
      if (s.cfg.train.on_nonfinite == "stop") nonfinite(s, k, bad);
      s.optimizer->zero_grad();
      ++u.skipped;
      continue;
    }
    if (k == 0) u.first_mb_ratio_dev = std::max(std::abs(mb_stats.seq_ratio_max - 1), std::abs(1 - mb_stats.seq_ratio_min));
    u.loss.add(mb_stats);
    u.lr = learning_rate(s.optimizer_steps, s.total_optimizer_steps, s.cfg.optimizer.lr, s.cfg.optimizer.warmup_steps,
                         s.cfg.optimizer.schedule, s.cfg.optimizer.min_lr_ratio);
    set_lr(*s.optimizer, u.lr);
    s.optimizer->step();
    ++s.optimizer_steps;
    ++u.updates;
    u.grad_norm_sum += gnorm;
    u.grad_norm_max = std::max(u.grad_norm_max, gnorm);
  }
  return u;
}

template <class T>
void add_stats(nlohmann::ordered_json& m, const std::string& name, const std::vector<T>& v, bool with_std) {
  double sum = 0, mn = v.empty() ? 0 : v[0], mx = mn;
  for (auto x : v) {
    sum += x;
    mn = std::min<double>(mn, x);
    mx = std::max<double>(mx, x);
  }
  const double mean = v.empty() ? 0 : sum / v.size();
  m[name + "_mean"] = mean;
  if (with_std) {
    double var = 0;
    for (auto x : v) var += (x - mean) * (x - mean);
    m[name + "_std"] = v.empty() ? 0 : std::sqrt(var / v.size());
  }
  m[name + "_min"] = mn;
  m[name + "_max"] = mx;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

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

nlohmann::ordered_json run_step(Trainer::State& s) {
  const auto t_step = Clock::now();
  const auto& c = s.cfg;
  const double temp = rollout::logprob_temperature(c.rollout.temperature);

  std::vector<const data::Example*> exs;
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t i : s.cursor->next(c.rollout.prompts_per_step)) {
    exs.push_back(&s.examples[i]);
    prompts.push_back(s.tok->encode_prompt(data::format_prompt(c.data, s.examples[i].prompt)));
  }

  auto t = Clock::now();
  auto batch = s.sampler->generate(prompts, c.rollout.group_size, s.sample_gen);
  const double t_sample = since(t);

  t = Clock::now();
  auto scored = score_batch(s, batch, exs);
  const double t_reward = since(t);

  auto rewards = torch::tensor(scored.rewards, torch::kDouble);
  auto adv = algo::group_advantages(rewards, c.rollout.group_size, s.adv_opts);
  auto rows = select_rows(s, batch, adv);

  UpdateStats u;
  double t_old = 0, t_update = 0;
  if (!rows.empty()) {
    auto plan_rows = plan_minibatches(rows, c.algorithm.num_minibatches, c.algorithm.micro_batch_size, s.train_gen);
    std::vector<std::vector<Micro>> plan;
    for (const auto& mb : plan_rows) {
      plan.emplace_back();
      for (const auto& micro : mb) {
        plan.back().push_back(slice_rows(batch, micro, adv.values));
        plan.back().back().to(s.policy->device());
      }
    }
    t = Clock::now();
    fill_old_logprobs(s, plan, batch.prompt_len, temp);
    t_old = since(t);
    t = Clock::now();
    u = update(s, plan, batch.prompt_len, temp);
    t_update = since(t);
  }
  s.skipped_updates += u.skipped;
  ++s.step;

  nlohmann::ordered_json m;
  m["step"] = s.step;
  m["epoch"] = s.cursor->epoch();
  add_stats(m, "reward", scored.rewards, true);
  std::vector<double> correct(scored.correct.begin(), scored.correct.end());
  double acc = 0;
  for (double x : correct) acc += x;
  m["accuracy"] = ratio(acc, static_cast<double>(correct.size()));
  std::vector<float> a(adv.values.data_ptr<float>(), adv.values.data_ptr<float>() + adv.values.numel());
  add_stats(m, "advantage", a, true);
  m["zero_variance_frac"] = ratio(static_cast<double>(adv.num_zero_variance), static_cast<double>(prompts.size()));
  m["update_sequences"] = static_cast<int64_t>(rows.size());
  add_stats(m, "response_len", batch.response_lengths, false);
  int64_t truncated = 0;
  for (auto f : batch.finish) truncated += f == rollout::Finish::kLength;
  m["truncated_frac"] = ratio(static_cast<double>(truncated), static_cast<double>(batch.num_rows()));
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
  if (c.algorithm.kl_coef > 0) m["kl"] = ratio(L.kl_sum, L.sequences);
  m["entropy"] = ratio(u.entropy_sum, L.tokens);
  m["grad_norm"] = ratio(u.grad_norm_sum, static_cast<double>(u.updates));
  m["grad_norm_max"] = u.grad_norm_max;
  m["lr"] = u.lr;
  m["optimizer_steps"] = s.optimizer_steps;
  m["skipped_updates"] = u.skipped;
  m["time_sample_s"] = t_sample;
  m["time_reward_s"] = t_reward;
  m["time_old_logprobs_s"] = t_old;
  m["time_update_s"] = t_update;
  m["time_step_s"] = since(t_step);
  m["sample_tokens"] = batch.generated_tokens();
  m["sample_tokens_per_s"] = ratio(static_cast<double>(batch.generated_tokens()), t_sample);
  m["train_tokens_per_s"] = ratio(static_cast<double>(u.train_tokens), t_update);
  m["peak_rss_mb"] = static_cast<double>(compat::peak_rss_bytes()) / (1024.0 * 1024.0);
  add_expert_load(m, *s.policy);
  return m;
}

}  // namespace gspo::train
