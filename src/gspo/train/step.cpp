// One rollout step of the loop: sample B x G responses, score them, compute group advantages, then take one
// optimizer step per mini-batch (gradients accumulated over micro-batches). With several ranks each samples and
// scores its B / world_size prompts (whole groups, so advantages stay local); the mini-batch plan is drawn over
// the global rows, identically on every rank, and each rank trains on its own rows of each mini-batch with loss
// weights relative to the global mini-batch, so the summed gradient is the one-process gradient.
#include <chrono>
#include <cmath>

#include "gspo/core/error.h"
#include "gspo/data/example.h"
#include "gspo/dist/comm.h"
#include "gspo/dist/grad_sync.h"
#include "gspo/dist/sharded_adamw.h"
#include "gspo/rollout/noise.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/schedule.h"
#include "gspo/train/state.h"

namespace gspo::train {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void score_batch(Trainer::State& s, const rollout::RolloutBatch& b, const std::vector<const data::Example*>& exs,
                 StepRecord& rec) {
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
    rec.rewards.push_back(sc.reward);
    rec.correct.push_back(sc.correct ? 1.0 : 0.0);
  }
}

// Global indices of the rows (over all ranks) that take part in the update after the optional filters.
std::vector<int64_t> select_rows(Trainer::State& s, const rollout::RolloutBatch& b, const algo::Advantages& adv) {
  auto keep = torch::zeros({b.num_rows()}, torch::kDouble);
  auto ka = keep.accessor<double, 1>();
  auto zv = adv.zero_variance.accessor<bool, 1>();
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    if (s.cfg.algorithm.filter_zero_variance && zv[r / b.group_size]) continue;
    if (s.cfg.algorithm.filter_truncated && b.finish[r] == rollout::Finish::kLength) continue;
    ka[r] = 1.0;
  }
  auto all = s.comm->all_gather(keep);
  auto a = all.accessor<double, 1>();
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < all.size(0); ++r)
    if (a[r] > 0) rows.push_back(r);
  return rows;
}

struct MiniBatch {
  std::vector<Micro> micros;  // this rank's rows of the mini-batch
  int64_t global_rows = 0;    // rows of the mini-batch over all ranks
};

std::vector<MiniBatch> make_plan(Trainer::State& s, const rollout::RolloutBatch& b, const at::Tensor& adv,
                                 const std::vector<int64_t>& rows, int64_t first_row) {
  const auto& a = s.cfg.algorithm;
  std::vector<MiniBatch> plan;
  for (const auto& whole : plan_minibatches(rows, a.num_minibatches, 0, s.train_gen)) {
    MiniBatch mb;
    std::vector<int64_t> mine;
    for (int64_t r : whole.front()) {
      ++mb.global_rows;
      if (r >= first_row && r < first_row + b.num_rows()) mine.push_back(r - first_row);
    }
    const size_t ms = a.micro_batch_size > 0 ? static_cast<size_t>(a.micro_batch_size) : std::max<size_t>(1, mine.size());
    for (size_t i = 0; i < mine.size(); i += ms) {
      std::vector<int64_t> part(mine.begin() + i, mine.begin() + std::min(mine.size(), i + ms));
      mb.micros.push_back(slice_rows(b, part, adv));
      mb.micros.back().to(s.policy->device());
    }
    plan.push_back(std::move(mb));
  }
  return plan;
}

void fill_old_logprobs(Trainer::State& s, std::vector<MiniBatch>& plan, int64_t P, double temp) {
  torch::NoGradGuard g;
  const bool recompute = s.cfg.algorithm.old_logprobs == "recompute";
  for (auto& mb : plan)
    for (auto& m : mb.micros) {
      const int64_t chunk = s.cfg.train.logprob_chunk_tokens;
      m.old_lp = recompute ? response_logprobs(*s.policy, m.ids, m.mask, P, temp, false, chunk).logprobs : m.behaviour_lp;
      if (s.reference) m.ref_lp = response_logprobs(*s.reference, m.ids, m.mask, P, temp, false, chunk).logprobs;
    }
}

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

void zero_grads(Trainer::State& s) {
  for (auto& p : train_params(s))
    if (p.grad().defined()) p.mutable_grad().zero_();
}

[[noreturn]] void nonfinite(const Trainer::State& s, size_t mb, const std::string& what) {
  throw TrainingError("step " + std::to_string(s.step + 1) + ", mini-batch " + std::to_string(mb + 1) + ": non-finite " +
                      what + "; stopped before applying it (nothing was saved from this step; the last checkpoint "
                      "is intact). Lower optimizer.lr, or set train.on_nonfinite: skip to drop such updates");
}

// Forward/backward over this rank's micro-batches of one mini-batch; returns "" or what was non-finite.
std::string accumulate(Trainer::State& s, MiniBatch& mb, int64_t P, double temp, UpdateStats& u,
                       algo::LossStats& mb_stats) {
  for (auto& m : mb.micros) {
    auto tl = response_logprobs(*s.policy, m.ids, m.mask, P, temp, true, s.cfg.train.logprob_chunk_tokens);
    auto res = algo::policy_loss({tl.logprobs, m.old_lp, m.resp_mask, m.advantages, m.ref_lp}, s.loss_opts);
    const double lv = res.loss.item<double>();
    if (!std::isfinite(lv)) return "loss (" + std::to_string(lv) + ")";
    (res.loss * (static_cast<double>(m.rows.size()) / static_cast<double>(mb.global_rows))).backward();
    if (s.master) s.master->accumulate_grads();  // bf16 gradients summed in float32
    mb_stats.add(res.stats);
    u.loss_sum += lv * static_cast<double>(m.rows.size());
    u.entropy_sum += (tl.entropy * m.resp_mask).sum().item<double>();
    u.train_tokens += m.real_tokens;
  }
  return "";
}

// Synchronises the gradients and returns the global gradient norm (before clipping).
double sync_gradients(Trainer::State& s, const std::vector<at::Tensor>& params, double max_norm) {
  if (s.zero) return s.zero->reduce_gradients();
  dist::all_reduce_gradients(*s.comm, params, s.cfg.distributed.bucket_mb * 1024 * 1024);
  return torch::nn::utils::clip_grad_norm_(params, max_norm);
}

void apply(Trainer::State& s, double lr, double gnorm, double max_norm) {
  if (s.zero) {
    const double coef = max_norm / (gnorm + 1e-6);  // torch::nn::utils::clip_grad_norm_'s rule
    s.zero->step(lr, coef < 1 ? coef : 1.0);
    return;
  }
  set_lr(*s.optimizer, lr);
  s.optimizer->step();
}

void apply_and_publish(Trainer::State& s, double lr, double gnorm, double max_norm) {
  apply(s, lr, gnorm, max_norm);
  if (s.master) s.master->copy_to_model();
}

UpdateStats update(Trainer::State& s, std::vector<MiniBatch>& plan, int64_t P, double temp) {
  UpdateStats u;
  auto params = train_params(s);
  const double max_norm = s.cfg.optimizer.grad_clip > 0 ? s.cfg.optimizer.grad_clip : INFINITY;
  for (size_t k = 0; k < plan.size(); ++k) {
    zero_grads(s);
    algo::LossStats mb_stats;
    std::string bad = accumulate(s, plan[k], P, temp, u, mb_stats);
    // Every rank learns whether any saw a non-finite loss, so all of them skip (or stop) together.
    if (s.comm->any(!bad.empty()) && bad.empty()) bad = "loss on another rank";
    double gnorm = 0;
    if (bad.empty()) {
      gnorm = sync_gradients(s, params, max_norm);
      if (!std::isfinite(gnorm)) bad = "gradient norm (" + std::to_string(gnorm) + ")";
    }
    if (!bad.empty()) {
      if (s.cfg.train.on_nonfinite == "stop") nonfinite(s, k, bad);
      zero_grads(s);
      ++u.skipped;
      continue;
    }
    if (k == 0) u.first_mb_ratio_dev = std::max(std::abs(mb_stats.seq_ratio_max - 1), std::abs(1 - mb_stats.seq_ratio_min));
    u.loss.add(mb_stats);
    u.lr = learning_rate(s.optimizer_steps, s.total_optimizer_steps, s.cfg.optimizer.lr, s.cfg.optimizer.warmup_steps,
                         s.cfg.optimizer.schedule, s.cfg.optimizer.min_lr_ratio);
    apply_and_publish(s, u.lr, gnorm, max_norm);
    ++s.optimizer_steps;
    ++u.updates;
    u.grad_norm_sum += gnorm;
    u.grad_norm_max = std::max(u.grad_norm_max, gnorm);
  }
  return u;
}

void record_rows(const rollout::RolloutBatch& b, const algo::Advantages& adv, StepRecord& rec) {
  auto a = adv.values.to(torch::kDouble).contiguous();
  rec.advantages.assign(a.data_ptr<double>(), a.data_ptr<double>() + a.numel());
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    rec.response_lengths.push_back(static_cast<double>(b.response_lengths[r]));
    rec.truncated.push_back(b.finish[r] == rollout::Finish::kLength ? 1.0 : 0.0);
  }
  rec.zero_variance = adv.num_zero_variance;
  rec.generated_tokens = b.generated_tokens();
}

}  // namespace

nlohmann::ordered_json run_step(Trainer::State& s) {
  const auto t_step = Clock::now();
  const auto& c = s.cfg;
  const double temp = rollout::logprob_temperature(c.rollout.temperature);
  const int64_t W = s.comm->world_size();
  const int64_t local_prompts = c.rollout.prompts_per_step / W;
  const int64_t first_row = s.comm->rank() * local_prompts * c.rollout.group_size;

  // Every rank advances the same cursor over the global batch and takes its contiguous share of the prompts.
  std::vector<const data::Example*> exs;
  std::vector<std::vector<int64_t>> prompts;
  const auto global = s.cursor->next(c.rollout.prompts_per_step);
  for (int64_t j = 0; j < local_prompts; ++j) {
    const int64_t i = global[s.comm->rank() * local_prompts + j];
    exs.push_back(&s.examples[i]);
    prompts.push_back(s.tok->encode_prompt(data::format_prompt(c.data, s.examples[i].prompt)));
  }

  StepRecord rec;
  rec.prompts = local_prompts;
  auto t = Clock::now();
  const rollout::NoiseKey noise{rollout::mix_seed(static_cast<uint64_t>(c.rollout.seed), static_cast<uint64_t>(s.step)),
                                first_row};
  auto batch = s.sampler->generate(prompts, c.rollout.group_size, noise);
  rec.t_sample = since(t);

  t = Clock::now();
  score_batch(s, batch, exs, rec);
  rec.t_reward = since(t);

  auto rewards = torch::tensor(rec.rewards, torch::kDouble);
  auto adv = algo::group_advantages(rewards, c.rollout.group_size, s.adv_opts);
  record_rows(batch, adv, rec);
  auto rows = select_rows(s, batch, adv);
  rec.update_rows = static_cast<int64_t>(rows.size());

  if (!rows.empty()) {
    auto plan = make_plan(s, batch, adv.values, rows, first_row);
    t = Clock::now();
    fill_old_logprobs(s, plan, batch.prompt_len, temp);
    rec.t_old = since(t);
    t = Clock::now();
    rec.update = update(s, plan, batch.prompt_len, temp);
    rec.t_update = since(t);
  }
  s.skipped_updates += rec.update.skipped;
  ++s.step;
  return step_metrics(s, rec, t_step);
}

}  // namespace gspo::train
