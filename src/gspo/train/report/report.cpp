// Human-readable output of the loop: one progress line per step and the end-of-run summary.
#include <cmath>
#include <cstdio>

#include "gspo/train/metrics/metrics.h"
#include "gspo/train/report/summary.h"

namespace gspo::train {

std::string progress_line(const StepMetrics& m, int64_t max_steps) {
  char buf[512];
  std::string kl = m.shown(Shown::kKl) ? " kl " + std::to_string(m.kl.value()).substr(0, 7) : "";
  std::snprintf(buf, sizeof buf,
                "step %lld/%lld | reward %.3f acc %.3f | len %.1f trunc %.2f | ratio %.4f [%.4f, %.4f] | "
                "clip seq %.3f tok %.3f | ent %.3f | gnorm %.3f | lr %.2e%s | %.2fs (sample %.2f, update %.2f) "
                "%.0f tok/s",
                static_cast<long long>(m.step), static_cast<long long>(max_steps), m.reward.mean(), m.correct.mean(),
                m.response_len.mean(), m.truncated.mean(), m.seq_ratio.value(), written(m.seq_ratio_min),
                written(m.seq_ratio_max), m.clip_seq_low.value() + m.clip_seq_high.value(), m.clip_tok.value(),
                m.entropy.value(), m.grad_norm, m.lr, kl.c_str(), m.time_step_s, m.time_sample_s, m.time_update_s,
                m.sample_tokens_per_s.value());
  std::string line = buf;
  if (m.shown(Shown::kMultiRank))  // several ranks: the share of the step spent in collectives
    line += " | comm " + std::to_string(static_cast<int>(m.comm_frac * 100 + 0.5)) + "%";
  if (m.shown(Shown::kStale)) {  // how stale the samples were
    std::snprintf(buf, sizeof buf, " | lag %.1f max %.0f", m.version_lag.mean(), m.version_lag.max());
    line += buf;
  }
  if (m.shown(Shown::kPartial)) {  // partial rollouts: rows that spanned versions, rows carried into the next step
    std::snprintf(buf, sizeof buf, " | spanned %.0f%% carried %lld", 100 * m.spanned_rows.value(),
                  static_cast<long long>(m.carried_rows));
    line += buf;
  }
  if (m.shown(Shown::kTools)) {  // multi-turn: how much the tools were used, and how often they failed
    const double calls = m.tool_calls.sum;
    std::snprintf(buf, sizeof buf, " | tools %.2f calls/row err %.0f%%%s", m.tool_calls.value(),
                  calls > 0 ? 100 * static_cast<double>(m.tool_errors) / calls : 0.0,
                  m.tool_timeouts > 0 ? (" (" + std::to_string(m.tool_timeouts) + " timed out)").c_str() : "");
    line += buf;
  }
  if (m.shown(Shown::kDistill)) {  // distillation: the student's reverse KL to the teacher on its samples
    std::snprintf(buf, sizeof buf, " | teacher kl %.4f%s%s", m.distill_kl.value(),
                  m.distill_divergence.count > 0
                      ? (" div " + std::to_string(m.distill_divergence.value()).substr(0, 6)).c_str()
                      : "",
                  m.distill_failed_rows + m.distill_long_rows > 0
                      ? (" (" + std::to_string(m.distill_failed_rows + m.distill_long_rows) + " rows unscored)").c_str()
                      : "");
    line += buf;
  }
  if (m.shown(Shown::kAsync)) {  // rollout ranks: who waited for whom
    std::snprintf(buf, sizeof buf, " | idle trainer %.0f%% rollout %.0f%%", 100 * m.trainer_idle_frac,
                  100 * m.rollout_idle.value());
    line += buf;
  }
  return line;
}

std::string summary_text(const TrainSummary& s) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "%s after step %lld (%lld steps in %.1f s)\n"
                "  mean reward  %.3f -> %.3f   (first vs last 10%% of steps)\n"
                "  accuracy     %.3f -> %.3f\n"
                "  skipped updates %lld\n"
                "  metrics      %s\n"
                "  checkpoint   %s\n",
                s.interrupted ? "interrupted" : "finished", static_cast<long long>(s.last_step),
                static_cast<long long>(s.last_step - s.first_step), s.seconds, s.reward_start, s.reward_end,
                s.accuracy_start, s.accuracy_end, static_cast<long long>(s.skipped_updates), s.metrics_path.c_str(),
                s.last_checkpoint.empty() ? "(none)" : s.last_checkpoint.c_str());
  std::string text = buf;
  if (s.heldout_problems > 0) {
    char line[256];
    std::snprintf(line, sizeof line, "  held out     greedy accuracy %.3f on %lld problems never trained on "
                  "(%.3f on as many training problems)\n", s.heldout_accuracy,
                  static_cast<long long>(s.heldout_problems), s.train_greedy_accuracy);
    text += line;
  }
  if (s.async) {
    char line[256];
    std::snprintf(line, sizeof line, "  async        version lag mean %.2f, max %lld (async.max_staleness %lld); idle: "
                  "trainer 0 %.0f%%, rollout ranks %.0f%%\n", s.lag_mean, static_cast<long long>(s.lag_max),
                  static_cast<long long>(s.max_staleness), 100 * s.trainer_idle, 100 * s.rollout_idle);
    text += line;
  }
  if (s.partial) {  // (beside rollout ranks the async line has the lag)
    char line[256];
    const int n = std::snprintf(line, sizeof line, "  partial      rows spanning versions %.0f%%, rows carried a "
                                "step %.1f (mean)", 100 * s.spanned, s.carried);
    if (!s.async && n > 0 && n < static_cast<int>(sizeof line))
      std::snprintf(line + n, sizeof line - n, "; version lag mean %.2f, max %lld (async.max_staleness %lld)",
                    s.lag_mean, static_cast<long long>(s.lag_max), static_cast<long long>(s.max_staleness));
    text += std::string(line) + "\n";
  }
  for (const auto& [key, last] : s.validation_last.items()) {
    char line[256];
    const double first = s.validation_first.value(key, last.get<double>());
    std::snprintf(line, sizeof line, "  validation   %-28s %.3f -> %.3f   (step %lld -> %lld)\n", key.c_str(), first,
                  last.get<double>(), static_cast<long long>(s.validation_first_step),
                  static_cast<long long>(s.validation_last_step));
    text += line;
  }
  if (s.tools) {
    char line[256];
    std::snprintf(line, sizeof line, "  tools        %lld calls, %lld tool errors (%.1f%%), %lld of them timeouts\n",
                  static_cast<long long>(s.tool_calls), static_cast<long long>(s.tool_errors),
                  s.tool_calls > 0 ? 100.0 * static_cast<double>(s.tool_errors) / static_cast<double>(s.tool_calls) : 0.0,
                  static_cast<long long>(s.tool_timeouts));
    text += line;
  }
  if (s.distill) {
    char line[256];
    std::snprintf(line, sizeof line, "  distill      reverse KL to the teacher %.4f -> %.4f   (first vs last 10%% of "
                  "steps)\n", s.distill_kl_start, s.distill_kl_end);
    text += line;
  }
  if (s.dropped_prompts > 0)
    text += "  prompts too long for max_seq_len, skipped at load: " + std::to_string(s.dropped_prompts) + "\n";
  return text;
}

}  // namespace gspo::train
