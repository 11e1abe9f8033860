#include "gspo/train/report/run_tally.h"

#include <algorithm>
#include <cmath>

#include "gspo/core/log.h"

namespace gspo::train {
namespace {

// The steps of a run of `in_a_row` bad steps that say so: the first and every 20th.
bool say_in_a_row(int64_t in_a_row) { return in_a_row == 1 || (in_a_row > 0 && in_a_row % 20 == 0); }

double window_mean(const std::vector<double>& v, bool head) {
  if (v.empty()) return 0;
  const size_t n = std::max<size_t>(1, v.size() / 10);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += head ? v[i] : v[v.size() - 1 - i];
  return sum / static_cast<double>(n);
}

}  // namespace

void RunTally::add(const StepMetrics& m, int64_t step, TrainSummary& sum) {
  rewards_.push_back(m.reward.mean());
  accs_.push_back(m.correct.mean());
  if (m.shown(Shown::kStale)) add_async(m);
  sum.skipped_updates += m.skipped_updates;
  warn_flat(m, step);
  if (m.shown(Shown::kScoring)) warn_scoring_failures(m);
  if (m.shown(Shown::kDistill)) {
    distill_kl_.push_back(m.distill_kl.value());
    warn_teacher_failures(m);
  }
  if (m.shown(Shown::kTools)) {
    sum.tools = true;
    sum.tool_calls += std::llround(m.tool_calls.sum);
    sum.tool_errors += m.tool_errors;
    sum.tool_timeouts += m.tool_timeouts;
    warn_tool_errors(m);
  }
}

void RunTally::add_async(const StepMetrics& m) {
  auto& a = async_;
  a.spanned += m.spanned_rows.sum, a.spanned_rows += m.spanned_rows.count;
  a.carried += static_cast<double>(m.carried_rows), a.steps += 1;
  for (double v : m.version_lag.rows) a.lag += v;
  a.rows += static_cast<double>(m.version_lag.rows.size());
  a.lag_max = std::max<int64_t>(a.lag_max, static_cast<int64_t>(m.version_lag.max()));
  a.wait_s += m.time_rollout_wait_s, a.step_s += m.time_step_s;
  a.rollout_wait += m.rollout_idle.sum, a.rollout_total += m.rollout_idle.count;
}

void RunTally::into(TrainSummary& s) const {
  s.reward_start = window_mean(rewards_, true);
  s.reward_end = window_mean(rewards_, false);
  s.accuracy_start = window_mean(accs_, true);
  s.accuracy_end = window_mean(accs_, false);
  s.distill = !distill_kl_.empty();
  s.distill_kl_start = window_mean(distill_kl_, true);
  s.distill_kl_end = window_mean(distill_kl_, false);
  const auto& a = async_;
  s.lag_mean = a.rows > 0 ? a.lag / a.rows : 0;
  s.lag_max = a.lag_max;
  s.trainer_idle = a.step_s > 0 ? a.wait_s / a.step_s : 0;
  s.rollout_idle = a.rollout_total > 0 ? a.rollout_wait / a.rollout_total : 0;
  s.spanned = a.spanned_rows > 0 ? a.spanned / a.spanned_rows : 0;
  s.carried = a.steps > 0 ? a.carried / a.steps : 0;
}

// Every reward equal (across the global batch) gives every advantage 0: nothing to learn from. A reward that never
// varies (a wrong answer key, a verifier that cannot parse the responses) is noticed.
void RunTally::warn_flat(const StepMetrics& m, int64_t step) {
  flat_steps_ = m.reward.max() == m.reward.min() ? flat_steps_ + 1 : 0;
  if (!main_ || !say_in_a_row(flat_steps_)) return;
  const double r = m.reward.min();
  if (m.shown(Shown::kDistill)) return;  // (the teacher's per-token terms still teach)
  log::warn("step {}: every reward of the batch is {} ({} step(s) in a row): no learning signal this step{}", step, r,
            flat_steps_, r <= 0 ? "; if it persists, check the answers and the verifier (gspo generate shows responses)"
                                : "");
}

// A step at least half of whose tool calls were tool errors (every rank's calls): episodes whose tools fail teach the
// model little of use.
void RunTally::warn_tool_errors(const StepMetrics& m) {
  const double calls = m.tool_calls.sum;
  tool_steps_ = calls > 0 && 2 * static_cast<double>(m.tool_errors) >= calls ? tool_steps_ + 1 : 0;
  if (!main_ || !say_in_a_row(tool_steps_)) return;
  log::warn("step {}: {} of {} tool calls were tool errors ({} timed out past tools.timeout_s; {} step(s) in a row): "
            "the episodes' observations are error messages; check tools.list's programs, and the calls the model "
            "writes (gspo eval writes each episode with its observations to samples.jsonl)",
            m.step, m.tool_errors, std::llround(calls), m.tool_timeouts, tool_steps_);
}

// A step at least half of whose rows the reward model or the judge could not score (every rank's rows), with this
// rank's latest reason; those rows got reward 0 from the scorer.
void RunTally::warn_scoring_failures(const StepMetrics& m) {
  unscored_steps_ = m.reward_model_rows > 0 && 2 * m.reward_model_failed >= m.reward_model_rows ? unscored_steps_ + 1
                                                                                                 : 0;
  if (!main_ || !say_in_a_row(unscored_steps_)) return;
  log::warn("step {}: {} of {} rows could not be scored by the reward model or judge ({} step(s) in a row; latest: "
            "{}): they get reward 0 from it; metrics.jsonl counts them in reward_model_failed",
            m.step, m.reward_model_failed, m.reward_model_rows, unscored_steps_,
            m.reward_model_failure.empty() ? "on another rank" : m.reward_model_failure);
}

// A step with rows the distillation teacher could not score (every rank's): they kept their reward term only.
void RunTally::warn_teacher_failures(const StepMetrics& m) {
  const int64_t bad = m.distill_failed_rows + m.distill_long_rows;
  untaught_steps_ = bad > 0 ? untaught_steps_ + 1 : 0;
  if (!main_ || !say_in_a_row(untaught_steps_)) return;
  log::warn("step {}: {} of {} updated rows got no teacher term ({} with a non-finite teacher log-prob, {} longer "
            "than the teacher's context; {} step(s) in a row): they kept their reward term only; metrics.jsonl counts "
            "them in distill_failed_rows and distill_long_rows", m.step, bad, m.update_sequences,
            m.distill_failed_rows, m.distill_long_rows, untaught_steps_);
}

}  // namespace gspo::train
