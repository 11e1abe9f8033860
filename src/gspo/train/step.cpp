// A rollout step up to the update: prompts, sampling, scoring, advantages, filters, the mini-batch plan and the old
// (and reference) log-probs; then the step's metrics. The update itself is in update.cpp.
#include "gspo/train/step.h"

#include <torch/torch.h>

#include <numeric>

#include "gspo/core/resources.h"
#include "gspo/core/clock.h"
#include "gspo/core/log.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/reward/base/verifier.h"
#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/minibatch.h"
#include "gspo/train/rank_share.h"
#include "gspo/train/report/rollout_log.h"
#include "gspo/train/routing.h"
#include "gspo/train/teacher_term.h"
#include "gspo/train/engines/update_engine.h"

namespace gspo::train {
namespace {

using core::Clock;
constexpr double kMiB = 1024.0 * 1024.0;

// One phase's memory high-water mark (core/resources.h), in MiB: the peak restarts when this is made. Cost: a
// /proc write that walks the page tables once (CPU) or an allocator call (CUDA).
class PhasePeak {
 public:
  explicit PhasePeak(c10::Device device) : device_(device) { core::reset_phase_peaks(device); }
  double mb() const { return static_cast<double>(core::phase_peak_bytes(device_)) / kMiB; }

 private:
  c10::Device device_;
};

}  // namespace

void record_rows(const rollout::RolloutBatch& b, const algo::Advantages& adv, StepMetrics& m) {
  auto a = adv.values.to(torch::kDouble).contiguous();
  m.advantage.rows.assign(a.data_ptr<double>(), a.data_ptr<double>() + a.numel());
  const auto trained = b.trained_tokens();  // the policy's own tokens: what the length metrics count
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    m.response_len.rows.push_back(static_cast<double>(trained[r]));
    m.truncated.rows.push_back(b.finish[r] == rollout::Finish::kLength ? 1.0 : 0.0);
  }
  m.zero_variance.sum = static_cast<double>(adv.num_zero_variance);
  m.sample_tokens = b.generated_tokens();
}

StepRunner::StepRunner(StepParts parts) : p_(parts), experts_(make_step_experts(parts.experts)) {
  const auto& a = p_.cfg.algorithm;
  loss_opts_.kind = a.loss;
  loss_opts_.clip_low = a.clip_low;
  loss_opts_.clip_high = a.clip_high;
  loss_opts_.log_ratio_clamp = a.log_ratio_clamp;
  loss_opts_.kl_coef = a.kl_coef;
  loss_opts_.kl_estimator = a.kl_estimator;
  adv_opts_.kind = a.advantage;
  adv_opts_.sample_std = a.std_kind == config::StdKind::kSample;
  adv_opts_.eps = a.adv_eps;
  adv_opts_.scale = a.scale_rewards;
  is_opts_ = {a.is_correction, a.is_level, a.is_cap, a.is_floor};
  temperature_ = rollout::logprob_temperature(p_.cfg.rollout.temperature);
  const auto& tr = p_.cfg.train;
  eval_pass_ = {tr.chunked_head || tr.activation_checkpointing, false, tr.chunked_head};
  train_pass_ = {eval_pass_.layers, tr.activation_checkpointing, tr.chunked_head};
  eval_pass_.runner = train_pass_.runner = experts_.get();
  total_optimizer_steps_ = p_.cfg.train.max_steps * a.num_minibatches;
  const bool moe = p_.policy.has_routing() && !p_.policy.moe_layers().empty();
  replay_routes_ = moe && a.routing_replay == config::RoutingReplay::kOld;
  rollout_routes_ = moe && a.routing_replay == config::RoutingReplay::kRollout;
  if (rollout_routes_) {
    const int64_t first = p_.policy.moe_layers().front();
    route_top_k_ = p_.policy.moe_routing(first).first;
    route_experts_ = p_.policy.parameter("layers." + std::to_string(first) + ".mlp.gate.weight").size(0);
  }
  measure_routes_ = moe && a.routing_metrics;
  share_prompts_ = tr.shared_prefix && p_.policy.has_layers();
  share_whole_ = share_prompts_ && experts_->runs_shared(p_.policy);
  split_tokens_ = tr.shared_prefix_split_tokens;
  if (tr.shared_prefix && !share_prompts_)
    log::warn("train.shared_prefix: '{}' has no per-layer methods (docs/model-contract.md): every row runs its own "
              "prompt", p_.policy.path());
}

namespace {
// reward.components: each component's own reward of every row, a column a component (as many on every rank).
// A row without components (none: every row of a weighted sum has them) would count 0, keeping the columns aligned.
void record_components(const Scored& s, size_t components, StepMetrics& m) {
  m.reward_components.assign(components, Column{});
  for (const auto& row : s.components)
    for (size_t k = 0; k < components; ++k) m.reward_components[k].rows.push_back(k < row.size() ? row[k] : 0.0);
}
}  // namespace

// Global indices of the rows (over all ranks) that take part in the update after the optional filters.
std::vector<int64_t> StepRunner::select_rows(const rollout::RolloutBatch& b, const algo::Advantages& adv) {
  const auto& a = p_.cfg.algorithm;
  auto keep = torch::zeros({b.num_rows()}, torch::kDouble);
  auto ka = keep.accessor<double, 1>();
  auto zv = adv.zero_variance.accessor<bool, 1>();
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    // (a teacher gives every token a signal: zero-variance groups still learn from it)
    if (a.filter_zero_variance && !p_.teacher && zv[r / b.group_size]) continue;
    if (a.filter_truncated && b.finish[r] == rollout::Finish::kLength) continue;
    ka[r] = 1.0;
  }
  auto all = p_.comm.all_gather(keep);
  auto aa = all.accessor<double, 1>();
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < all.size(0); ++r)
    if (aa[r] > 0) rows.push_back(r);
  return rows;
}

// The same plan on every rank (drawn over the global rows); each rank keeps its own rows of each mini-batch.
std::vector<MiniBatch> StepRunner::make_plan(const rollout::RolloutBatch& b, const at::Tensor& adv,
                                             const std::vector<int64_t>& rows, int64_t first_row, at::Generator& gen) {
  const auto& a = p_.cfg.algorithm;
  const int64_t share = share_prompts_ ? b.group_size : 0;
  const auto how = share_whole_ ? SharePrompts::kWhole : share_prompts_ ? SharePrompts::kPacked : SharePrompts::kOff;
  std::vector<MiniBatch> plan;
  const auto minibatches = a.minibatch_groups ? plan_group_minibatches(rows, b.group_size, a.num_minibatches, gen)
                                              : plan_minibatches(rows, a.num_minibatches, gen);
  for (const auto& whole : minibatches) {
    MiniBatch mb;
    mb.global_rows = static_cast<int64_t>(whole.size());
    std::vector<int64_t> mine;
    for (int64_t r : whole)
      if (r >= first_row && r < first_row + b.num_rows()) mine.push_back(r - first_row);
    for (const auto& part : plan_micro(mine, b.response_lengths, b.prompt_len, a.micro_batch_size,
                                       a.micro_batch_tokens, share)) {
      mb.micros.push_back(slice_rows(b, part, adv, how, split_tokens_));
      mb.micros.back().to(p_.policy.device());
    }
    plan.push_back(std::move(mb));
  }
  if (p_.engine.lockstep()) pad_to_lockstep(b, adv, plan);
  return plan;
}

// ZeRO-3 gathers each layer's weights and reduce-scatters its gradients inside every pass, so every rank runs as
// many micro-batches per mini-batch as the rank with the most: the others add idle ones (row 0 of their batch, loss
// weight 0, no statistics).
void StepRunner::pad_to_lockstep(const rollout::RolloutBatch& b, const at::Tensor& adv, std::vector<MiniBatch>& plan) {
  for (auto& mb : plan) {
    const auto most = static_cast<size_t>(p_.comm.max(static_cast<double>(mb.micros.size())));
    while (mb.micros.size() < most) {
      mb.micros.push_back(slice_rows(b, {0}, adv));
      mb.micros.back().idle = true;
      mb.micros.back().to(p_.policy.device());
    }
  }
}

// pi_old (recomputed at the step-start weights, or the sampler's), pi_ref, the mismatch between the trainer's and
// the sampler's log-probs, and the correction weights.
void StepRunner::fill_old_logprobs(std::vector<MiniBatch>& plan, int64_t P, StepMetrics& m) {
  torch::NoGradGuard g;
  const auto& a = p_.cfg.algorithm;
  const bool recompute = a.old_logprobs == config::OldLogprobs::kRecompute;
  const bool measure = a.mismatch_metrics || a.is_correction != config::IsCorrection::kNone;
  const int64_t chunk = p_.cfg.train.logprob_chunk_tokens;
  algo::MismatchStats mm;
  for (auto& mb : plan)
    for (auto& mi : mb.micros) {
      at::Tensor train_lp;  // the trainer's log-probs at the step-start weights
      RouteIO routes{rollout_routes_ ? &mi.sampled : nullptr,
                     replay_routes_ || measure_routes_ ? &mi.routes : nullptr};
      if (recompute || measure)
        train_lp = response_logprobs(p_.policy, mi.ids, mi.mask, P, temperature_, Entropy::kSkip, chunk,
                                     eval_pass_, routes, mi.shape).logprobs;
      else if (routes.record)
        mi.routes = rollout_routes_ ? mi.sampled : route_experts(p_.policy, mi.ids, mi.mask, P, mi.shape, experts_.get());
      mi.old_lp = recompute ? train_lp : mi.behaviour_lp;
      // R3: the record replayed the rollout's experts; it counts the tokens the rollout ran (each row's last: never)
      if (rollout_routes_ && routes.record) mi.routes.response = mi.sampled.response;
      if (p_.reference_base) {  // the policy's base (its adapters off); an idle micro-batch too: ZeRO-3 gathers in it
        const model::AdaptersOff base_only(*p_.reference_base);
        mi.ref_lp = response_logprobs(p_.policy, mi.ids, mi.mask, P, temperature_, Entropy::kSkip, chunk, eval_pass_,
                                      {rollout_routes_ ? &mi.sampled : nullptr, nullptr}, mi.shape).logprobs;
      }
      if (mi.idle) continue;
      if (p_.teacher) p_.teacher->apply(mi, P);  // (after old_lp: the per-token advantages compare with it)
      if (p_.reference)
        mi.ref_lp = response_logprobs(*p_.reference, mi.ids, mi.mask, P, temperature_, Entropy::kSkip, chunk,
                                      eval_pass_, {rollout_routes_ ? &mi.sampled : nullptr, nullptr}, mi.shape)
                     .logprobs;
      if (!measure) continue;
      mm.add(algo::mismatch_stats(train_lp, mi.behaviour_lp, mi.loss_mask, is_opts_));
      mi.is = algo::importance_weights(train_lp, mi.behaviour_lp, mi.loss_mask, is_opts_);
    }
  if (!measure) return;
  m.mismatch_diff = {mm.diff_sum, mm.tokens};
  m.mismatch_diff_abs_max = mm.diff_abs_max;
  m.is_weight = {mm.weight_sum, mm.weight_count};
  m.is_weight_min = mm.weight_count > 0 ? mm.weight_min : kNoValue;
  m.is_weight_max = mm.weight_count > 0 ? mm.weight_max : -kNoValue;
  m.is_truncated = {mm.truncated, mm.weight_count};
  m.is_rejected = {mm.rejected, mm.weight_count};
}

const RouteRecord* StepRunner::replayed(const Micro& mi) const {
  return replay_routes_ ? &mi.routes : rollout_routes_ ? &mi.sampled : nullptr;
}

void StepRunner::rollout_routes(std::vector<MiniBatch>& plan, int64_t P, StepMetrics& m) {
  torch::NoGradGuard g;
  const auto& moe = p_.policy.moe_layers();
  RoutingChange diff(moe.size());
  for (auto& mb : plan)
    for (auto& mi : mb.micros) {
      if (!mi.rollout_routes.defined())
        throw std::logic_error("algorithm.routing_replay rollout: a micro-batch came without the rollout's routes");
      mi.sampled = rollout_record(mi.rollout_routes, mi.mask, P, mi.shape.width, moe, p_.policy.num_layers());
      if (!measure_routes_) continue;  // (an idle micro-batch too: ZeRO-3 and expert parallelism gather in it)
      auto own = route_experts(p_.policy, mi.ids, mi.mask, P, mi.shape, experts_.get());
      if (!mi.idle) diff.add(mi.sampled, own, moe);
    }
  if (!measure_routes_) return;
  m.moe_rollout_route_diff = {diff.changed_total(), diff.tokens_total()};
}

// moe_routing_change_frac: the experts of the step's rows after the last update against the old-log-prob pass's,
// counts summed over the ranks here (so the metric rows are the job's values already).
void StepRunner::measure_routing(const std::vector<MiniBatch>& plan, int64_t P, StepMetrics& m) {
  const auto& moe = p_.policy.moe_layers();
  RoutingChange change(moe.size());
  for (const auto& mb : plan)
    for (const auto& mi : mb.micros) {
      auto now = route_experts(p_.policy, mi.ids, mi.mask, P, mi.shape, experts_.get());
      if (!mi.idle) change.add(mi.routes, now, moe);
    }
  const auto L = static_cast<int64_t>(moe.size());
  auto counts = torch::cat({torch::tensor(change.changed, torch::kDouble), torch::tensor(change.tokens, torch::kDouble)});
  p_.comm.all_reduce(counts);
  auto c = counts.accessor<double, 1>();
  double changed = 0, tokens = 0;
  for (int64_t j = 0; j < L; ++j) {
    changed += c[j];
    tokens += c[L + j];
    m.moe_routing_change_layers.push_back(c[L + j] > 0 ? c[j] / c[L + j] : 0.0);
  }
  m.moe_routing_change_frac = tokens > 0 ? changed / tokens : 0.0;
}

// A due step's rollouts with the trainer's view of the logged rows: their log-probs and entropies at the step-start
// weights and the sampling temperature (what the old-log-prob pass recomputes, before the rows are shuffled and
// filtered). Every rank runs the pass, on one row when it logs none: ZeRO-3 and expert parallelism gather in it.
void StepRunner::write_rollouts(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row) {
  const auto& b = s.batch;
  const int64_t keep = p_.rollouts->rows_here(b.num_rows(), b.group_size, first_row);
  RolloutLog::TrainerView view;
  if (b.num_rows() > 0) {
    torch::NoGradGuard g;
    const int64_t n = std::max<int64_t>(keep, 1);
    auto t = response_logprobs(p_.policy, b.input_ids.narrow(0, 0, n), b.attention_mask.narrow(0, 0, n),
                               b.prompt_len, temperature_, Entropy::kCompute, p_.cfg.train.logprob_chunk_tokens,
                               eval_pass_);
    const auto own = b.loss_mask.narrow(0, 0, n).to(torch::kFloat);
    if (keep > 0) view = {(t.logprobs * own).cpu(), (t.entropy * own).cpu(), {}};
    if (keep > 0 && p_.teacher) {  // (the teacher is whole on every rank: only the ranks that log run it)
      std::vector<int64_t> rows(static_cast<size_t>(n));
      std::iota(rows.begin(), rows.end(), 0);
      view.teacher_logprobs = (p_.teacher->logprobs(b.input_ids.narrow(0, 0, n), b.attention_mask.narrow(0, 0, n),
                                                    b.prompt_len, rows) * own).cpu();
    }
  }
  p_.rollouts->write(step, s, adv, first_row, view);
}

StepMetrics StepRunner::run(Progress& progress) {
  const auto t_step = Clock::now();
  p_.comm.take_counters();  // the step's collectives only: not the checkpoint or stop agreement between steps
  experts_->step_begins();
  const auto& c = p_.cfg;
  const int64_t first_row = p_.comm.rank() * prompts_per_rank(c, p_.comm.world_size()) * c.rollout.group_size;

  StepMetrics m;
  const auto device = p_.policy.device();
  PhasePeak rollout_peak(device);
  p_.engine.take_rollout_passes();  // (validation's, between steps, are not this step's)
  auto scored = [&] {
    const WholeWeights whole(p_.engine, p_.source.samples_here());  // ZeRO-3: the rollout's whole copy of the weights
    return sample_and_score(progress, m);
  }();
  experts_->rollout_done(p_.engine, m);
  m.peak_mb_rollout = rollout_peak.mb();
  const auto& batch = scored.batch;
  m.reward.rows = scored.rewards;
  m.correct.rows = scored.correct;
  m.source_names = p_.sources;
  m.source.rows = scored.sources;
  m.source.rows.resize(m.reward.rows.size(), -1.0);  // (a column as long as the others)
  record_components(scored, p_.verifier.component_weights().size(), m);
  for (int64_t v : scored.versions) m.version_lag.rows.push_back(static_cast<double>(progress.step - v));
  m.zero_variance.count = static_cast<double>(batch.num_rows() / c.rollout.group_size);
  for (double pen : scored.penalty) {
    m.overlong_penalty.sum += pen;
    m.overlong_penalized.sum += pen < 0 ? 1.0 : 0.0;
  }
  m.overlong_penalty.count = m.overlong_penalized.count = static_cast<double>(scored.penalty.size());

  if (p_.teacher) p_.teacher->begin_step(scored);  // (its own prompts for the rows, when it reads its format)
  auto adv = advantages(scored);
  if (p_.advantage_sign < 0) adv.values = -adv.values;  // GSPO_FAULT=advantage_sign, tests only (setup/fault.h)
  if (p_.rollouts && p_.rollouts->due(progress.step + 1)) write_rollouts(progress.step + 1, scored, adv, first_row);
  record_rows(batch, adv, m);
  const auto rows = select_rows(batch, adv);
  m.update_sequences = static_cast<int64_t>(rows.size());

  if (rollout_routes_)  // (on the host: the batch lives there)
    check_rollout_routes(batch.routes, batch.num_rows(), static_cast<int64_t>(p_.policy.moe_layers().size()),
                         route_top_k_, route_experts_, p_.policy.path());
  if (!rows.empty()) {
    PhasePeak logprobs_peak(device);
    auto plan = make_plan(batch, adv.values, rows, first_row, progress.shuffle_gen);
    for (const auto& mb : plan)
      for (const auto& mi : mb.micros) m.prompt_tokens_saved += mi.idle ? 0 : mi.prompt_tokens_saved;
    auto t = Clock::now();
    if (rollout_routes_) rollout_routes(plan, batch.prompt_len, m);
    fill_old_logprobs(plan, batch.prompt_len, m);
    m.time_old_logprobs_s = core::seconds_since(t);
    m.peak_mb_logprobs = logprobs_peak.mb();
    PhasePeak update_peak(device);
    t = Clock::now();
    update(plan, batch.prompt_len, progress, m);
    m.time_update_s = core::seconds_since(t);
    if (p_.teacher) p_.teacher->take(m);  // (the scoring's figures and the update's divergence)
    m.peak_mb_update = update_peak.mb();
    if (measure_routes_) {
      t = Clock::now();
      measure_routing(plan, batch.prompt_len, m);
      m.time_routing_s = core::seconds_since(t);
    }
  }
  ++progress.step;
  p_.source.step_done(progress.step, m);
  m.sample_tokens_per_s = {static_cast<double>(m.sample_tokens), m.time_sample_s};
  m.train_tokens_per_s.seconds = m.time_update_s;
  finish(m, progress);
  m.time_step_s = core::seconds_since(t_step);
  m.comm_frac = m.time_step_s > 0 ? m.time_comm_s / m.time_step_s : 0.0;
  m.trainer_idle_frac = m.time_step_s > 0 ? m.time_rollout_wait_s / m.time_step_s : 0.0;
  return m;
}

// The step's remaining figures, then the reduction over the ranks and what the reduction itself cost.
void StepRunner::finish(StepMetrics& m, const Progress& progress) {
  m.step = progress.step;
  m.epoch = progress.cursor.epoch();
  m.optimizer_steps = progress.optimizer_steps;
  const bool on_cuda = p_.policy.device().is_cuda();
  m.world_size = p_.comm.world_size();
  m.peak_rss_mb = static_cast<double>(core::peak_rss_bytes()) / kMiB;
  if (on_cuda) m.peak_gpu_mb = static_cast<double>(core::peak_device_bytes(p_.policy.device())) / kMiB;
  m.optimizer_state_mb_per_rank = static_cast<double>(p_.engine.state_bytes()) / kMiB;
  m.model_state_mb_per_rank = static_cast<double>(p_.engine.model_state_bytes()) / kMiB;
  const auto gathers = p_.engine.take_gather_counts();
  m.zero3_gathers = gathers.gathers;
  m.zero3_prefetch_frac = gathers.gathers > 0 ? static_cast<double>(gathers.prefetched) / gathers.gathers : 0;
  experts_->record_load(p_.policy, m);
  reduce_across_ranks(m, p_.comm);
  auto counters = p_.comm.take_counters();
  experts_->add_comm(counters);
  m.time_comm_s = counters.seconds;
  m.comm_mb = counters.bytes / kMiB;
  m.comm_calls = counters.calls;
  m.set_shown(p_.cfg, {on_cuda, m.world_size, measure_routes_});
}

}  // namespace gspo::train
