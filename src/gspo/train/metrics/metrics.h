// The metrics of one rollout step (one line of RUN/metrics.jsonl). StepMetrics::visit is the single table of them:
// each row names a field, how the ranks' values become the job's value, how two runs at different world sizes must
// agree on it, when it is written, and what it means. That table drives the cross-rank reduction (metrics_reduce.cpp),
// the JSONL line, `gspo config --metrics` (docs/metrics.md is generated from it) and the exact/close lists of
// tests/dist/compare_runs.py. The progress line and the end summary read the typed fields; nothing is read back from
// JSON.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <bitset>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gspo::config { struct Config; }
namespace gspo::parallel { class Comm; }

namespace gspo::train {

// How the ranks' values of a metric become the job's value.
enum class Reduce {
  kSame,    // equal on every rank already (counters, the LR, the global gradient norm): taken as it is
  kLocal,   // rank 0's own figure (wall times, communication, its optimizer state): ranks legitimately differ
  kSum,     // summed over the ranks
  kMax,     // the largest over the ranks
  kMin,     // the smallest over the ranks
  kMean,    // a Mean: numerator and denominator each summed over the ranks, then divided
  kRate,    // a Rate: amount summed over the ranks, divided by rank 0's seconds
  kGather,  // a statistic of a per-row Column, gathered over the ranks in global row order
};

// How two runs of one job at different world sizes must agree on a metric (tests/dist/compare_runs.py).
enum class Match {
  kExact,  // bit for bit: counts, and statistics of the sampled tokens and their rewards
  kClose,  // within a relative tolerance: sums and gradients that differ by summation order
  kNone,   // not compared: wall times, memory, communication, per-rank figures
};

// When a metric appears in the line. Each value is one row of the visibility table (kShownRules, metrics.cpp), which
// says it in words for docs/metrics.md and decides it from the config and the step (StepMetrics::set_shown): a new
// condition is a value here and a row there.
enum class Shown {
  kAlways,
  kKl,         // algorithm.kl_coef > 0
  kCuda,       // the policy is on a CUDA device
  kMultiRank,  // world size > 1
  kMoe,        // the policy reports expert loads (MoE)
  kMismatch,   // algorithm.mismatch_metrics (or a mismatch correction)
  kDynamic,    // rollout.dynamic_sampling
  kOverlong,   // reward.overlong_buffer > 0
  kPolicyMask, // tokens can be left out of the policy term (top_entropy_quantile < 1, is_correction mis)
  kRouting,    // an MoE policy with the routing methods and algorithm.routing_metrics
  kZero3,      // distributed.zero_stage 3
  kTools,      // tools.list is not empty (multi-turn rollouts)
  kAsync,      // distributed.rollout_ranks > 0 (asynchronous training)
  kStale,      // rollout ranks or async.partial_rollout: rows may be sampled by older weights
  kPartial,    // async.partial_rollout
  kExperts,    // distributed.expert_parallel > 1
  kComponents, // reward.components set
  kScoring,    // a reward model or a judge scores (reward.kind or a component model or judge)
  kSources,    // the training rows name data sources (data.source_key)
  kDistill,    // distill.teacher set (on-policy distillation)
  kRolloutRoutes,  // kRouting with algorithm.routing_replay rollout (R3)
  kShared,     // train.shared_prefix
  kCount
};

const char* name_of(Reduce r);
const char* name_of(Match m);
const char* name_of(Shown s);

// A mean whose numerator and denominator are each summed over the ranks; 0 when the denominator is 0.
struct Mean {
  double sum = 0, count = 0;
  double value() const { return count > 0 ? sum / count : 0.0; }
};

// A throughput: `amount` summed over the ranks, over rank 0's `seconds`; 0 when no time was measured.
struct Rate {
  double amount = 0, seconds = 0;
  double value() const { return seconds > 0 ? amount / seconds : 0.0; }
};

// One value per rollout row: this rank's rows, then every row in global row order once gathered.
struct Column {
  std::vector<double> rows;
  double mean() const;  // 0 when empty
  double std() const;   // population standard deviation; 0 when empty
  double min() const;   // 0 when empty
  double max() const;
};

enum class Stat { kMean, kStd, kMin, kMax };
// A statistic of a column: what a kGather row shows.
struct ColumnStat {
  Column* column;
  Stat stat;
  double value() const;
};
// The same statistic of each of several columns (one a reward component): a list.
struct ColumnsStat {
  std::vector<Column>* columns;
  Stat stat;
  std::vector<double> value() const;
};

// A column's mean (or, without a column, the count of rows) per data source: a JSON object keyed by source name in
// `names`' order, rows without a source under "(none)"; a source without rows in the step is left out.
struct BySourceStat {
  Column* column;  // nullptr: count the rows
  Column* source;  // per row: its source's place in `names` (Example::source_id), -1 = none
  const std::vector<std::string>* names;
  nlohmann::ordered_json value() const;
};

constexpr double kNoValue = std::numeric_limits<double>::infinity();  // an extremum over nothing: written as 0

// How a double field is written (JSONL line, progress line): an extremum over nothing (or any non-finite value) as 0.
inline double written(double v) { return std::isfinite(v) ? v : 0.0; }

// What a row's visibility is decided from besides the config and the metrics themselves.
struct ShownFacts {
  bool on_cuda = false;     // the policy is on a CUDA device
  int64_t world_size = 1;   // the training ranks
  bool routing = false;     // the step measured routing changes (an MoE policy with algorithm.routing_metrics)
};

struct StepMetrics {
  // Which rows are written: one bit per Shown (kAlways's set), decided by set_shown from the table.
  std::bitset<static_cast<size_t>(Shown::kCount)> shows{1};
  bool shown(Shown s) const { return shows.test(static_cast<size_t>(s)); }
  void show(Shown s, bool on = true) { shows.set(static_cast<size_t>(s), on); }
  // Every bit from the visibility table (after the metrics it reads: moe_load_imbalance).
  void set_shown(const config::Config& cfg, const ShownFacts& facts);

  int64_t step = 0, epoch = 0;
  Column reward, correct, advantage, response_len, truncated;
  std::vector<Column> reward_components;  // reward.components: per component, its own (unweighted) reward per row
  Column version_lag;                     // per row: the step's version minus the version that sampled it
  Column source;                          // per row: its data source's place in source_names, -1 = none
  std::vector<std::string> source_names;  // the training rows' data sources, sorted; empty = none (not a field)
  Mean zero_variance;                     // groups with all-equal rewards, over prompts
  int64_t update_sequences = 0;
  Mean seq_ratio;                         // sum of s_i over updated sequences
  double seq_ratio_min = kNoValue, seq_ratio_max = -kNoValue;
  double first_minibatch_ratio_dev = 0;
  Mean clip_seq_low, clip_seq_high, clip_seq, clip_tok_low, clip_tok_high, clip_tok;
  Mean loss, kl, kl_seq, entropy, policy_tokens;
  Mean mismatch_diff, is_weight, is_truncated, is_rejected;  // sampler vs trainer at the step start
  double mismatch_diff_abs_max = 0, is_weight_min = kNoValue, is_weight_max = -kNoValue;
  int64_t dynamic_rounds = 0, dynamic_prompts = 0;
  Mean overlong_penalty, overlong_penalized;
  Mean tool_turns, tool_calls;            // per sampled row (every round): assistant turns, tool calls
  double tool_turns_max = 0;
  int64_t tool_errors = 0, tool_timeouts = 0;
  Mean observation_tokens;                // tools' tokens over response tokens, every sampled row
  double time_tools_s = 0, time_tools_wait_s = 0;
  double time_rollout_wait_s = 0, trainer_idle_frac = 0;  // trainer 0 waiting for its share of the batch
  Mean rollout_idle;                      // rollout ranks: seconds waiting for the trainers over seconds per batch
  double weight_sync_s = 0, weight_sync_mb = 0;
  Mean spanned_rows;                      // partial rollouts: the step's rows sampled by more than one version
  int64_t carried_rows = 0;               // partial rollouts: rows still running when the step's batch was complete
  int64_t continued_tokens = 0;           // partial rollouts: tokens so far of continued rows, prefilled again
  int64_t prompt_tokens_saved = 0;        // shared prompts: prompt tokens each pass over the step's rows skipped
  double grad_norm = 0, grad_norm_max = 0, lr = 0;
  int64_t optimizer_steps = 0, skipped_updates = 0;
  double time_sample_s = 0, time_reward_s = 0, time_old_logprobs_s = 0, time_update_s = 0, time_step_s = 0;
  double time_routing_s = 0;
  Mean distill_kl, distill_share;     // per trained token: log pi_old - log pi_T; |teacher term| over |both terms|
  Mean distill_divergence;            // forward_kl / jsd: per sequence, its token mean of the top-k divergence
  int64_t distill_failed_rows = 0;    // rows whose teacher log-probs were not finite (no teacher term), every rank
  int64_t distill_long_rows = 0;      // rows longer than the teacher's context (no teacher term), every rank
  int64_t teacher_tokens = 0;         // tokens through the teacher (padding included), every rank
  double time_teacher_s = 0;
  int64_t sample_tokens = 0;
  int64_t sample_graph_captures = 0;  // CUDA graphs the sampler captured this step (rank 0)
  double kv_cache_mb = 0;             // KV cache the sampler allocated (largest at once, largest rank)
  int64_t rollout_slots = 0;          // rows of KV cache (rank 0)
  Mean rollout_slot_util;             // busy slot-steps over all slot-steps
  int64_t prefill_tokens = 0;         // prompt columns through prefill, every rank
  int64_t reward_model_tokens = 0;    // tokens through reward models and judges (padding included), every rank
  int64_t reward_model_rows = 0, reward_model_failed = 0;  // rows put to them, rows they could not score, every rank
  std::string reward_model_failure;   // this rank's latest reason a row could not be scored (the warning's; not a field)
  double train_host_reads = 0;        // device-to-host reads per update micro-batch (rank 0)
  int64_t sample_host_transfers = 0;  // host<->device transfers of the decode loops (rank 0)
  int64_t sample_decode_steps = 0;    // decode steps of the sampler (rank 0)
  Rate sample_tokens_per_s, train_tokens_per_s;
  Mean pad_frac;                          // padded tokens over rows x columns of the update's micro-batches
  double peak_rss_mb = 0, peak_gpu_mb = 0;
  double peak_mb_rollout = 0, peak_mb_logprobs = 0, peak_mb_update = 0;  // per phase (core/resources.h)
  int64_t world_size = 1;
  double time_comm_s = 0, comm_frac = 0, comm_mb = 0;
  int64_t comm_calls = 0;
  double optimizer_state_mb_per_rank = 0;
  double model_state_mb_per_rank = 0;  // weights + gradients + masters + moments held for training
  int64_t zero3_gathers = 0;           // ZeRO-3 decoder-layer gathers this step (rank 0)
  double ep_rollout_passes = 0;        // expert parallelism: sampling passes a rank ran with rows of its own (most)
  double ep_rollout_idle_frac = 0;     // of the passes a rank took part in, those it only served (largest)
  double zero3_prefetch_frac = 0;      // of them, the share a prefetch had started before the layer was needed
  std::vector<double> moe_load_imbalance;  // per MoE layer; empty for dense models
  double moe_load_imbalance_max = 0;
  double moe_routing_change_frac = 0;          // (token, MoE layer) pairs whose experts changed, over all ranks
  Mean moe_rollout_route_diff;  // R3: (token, MoE layer) pairs whose trainer routing differs from the rollout's
  std::vector<double> moe_routing_change_layers;  // per MoE layer, summed over the ranks

  // The table. v(name, field, Reduce, Match, Shown, doc) for each metric in line order; `field` is an int64_t&,
  // double&, Mean&, Rate&, std::vector<double>&, a ColumnStat, a ColumnsStat or a BySourceStat.
  template <class V>
  void visit(V&& v) {
    const auto A = Shown::kAlways;
    v("step", step, Reduce::kSame, Match::kExact, A, "rollout steps completed");
    v("epoch", epoch, Reduce::kSame, Match::kExact, A, "data epoch of the cursor");
    v("reward_mean", ColumnStat{&reward, Stat::kMean}, Reduce::kGather, Match::kExact, A,
      "mean reward over the B*G responses");
    v("reward_std", ColumnStat{&reward, Stat::kStd}, Reduce::kGather, Match::kExact, A,
      "population standard deviation of the rewards");
    v("reward_min", ColumnStat{&reward, Stat::kMin}, Reduce::kGather, Match::kExact, A, "smallest reward");
    v("reward_max", ColumnStat{&reward, Stat::kMax}, Reduce::kGather, Match::kExact, A, "largest reward");
    v("accuracy", ColumnStat{&correct, Stat::kMean}, Reduce::kGather, Match::kExact, A,
      "fraction of responses the verifier judged correct");
    const auto So = Shown::kSources;
    v("reward_by_source", BySourceStat{&reward, &source, &source_names}, Reduce::kGather, Match::kExact, So,
      "per data source (data.source_key), an object keyed by its name: the mean reward of the step's rows from it "
      "(as reward_mean: the overlong penalty included); rows without a source under \"(none)\", sources without rows "
      "this step left out");
    v("accuracy_by_source", BySourceStat{&correct, &source, &source_names}, Reduce::kGather, Match::kExact, So,
      "per data source: the fraction of its rows the verifier (its source's, under reward.kind auto) judged correct");
    v("rows_by_source", BySourceStat{nullptr, &source, &source_names}, Reduce::kGather, Match::kExact, So,
      "per data source: how many of the step's rows (responses) came from it");
    v("reward_components_mean", ColumnsStat{&reward_components, Stat::kMean}, Reduce::kGather, Match::kClose,
      Shown::kComponents, "per reward.components entry, in its order: the mean of its own (unweighted) reward over "
      "the step's rows (a model reward's score beside the rules' rewards)");
    v("reward_components_std", ColumnsStat{&reward_components, Stat::kStd}, Reduce::kGather, Match::kClose,
      Shown::kComponents, "per reward.components entry: the population standard deviation of its own reward");
    v("advantage_mean", ColumnStat{&advantage, Stat::kMean}, Reduce::kGather, Match::kClose, A,
      "mean group advantage");
    v("advantage_std", ColumnStat{&advantage, Stat::kStd}, Reduce::kGather, Match::kClose, A,
      "population standard deviation of the advantages");
    v("advantage_min", ColumnStat{&advantage, Stat::kMin}, Reduce::kGather, Match::kClose, A, "smallest advantage");
    v("advantage_max", ColumnStat{&advantage, Stat::kMax}, Reduce::kGather, Match::kClose, A, "largest advantage");
    v("zero_variance_frac", zero_variance, Reduce::kMean, Match::kExact, A,
      "fraction of groups whose rewards are all equal (advantages all 0)");
    v("update_sequences", update_sequences, Reduce::kSame, Match::kExact, A,
      "responses left for the update after the filters");
    v("response_len_mean", ColumnStat{&response_len, Stat::kMean}, Reduce::kGather, Match::kExact, A,
      "mean response length in tokens the policy wrote (rollout loss_mask: a tool's inserted output not counted)");
    v("response_len_min", ColumnStat{&response_len, Stat::kMin}, Reduce::kGather, Match::kExact, A,
      "shortest response");
    v("response_len_max", ColumnStat{&response_len, Stat::kMax}, Reduce::kGather, Match::kExact, A,
      "longest response");
    v("truncated_frac", ColumnStat{&truncated, Stat::kMean}, Reduce::kGather, Match::kExact, A,
      "fraction of responses that hit rollout.max_new_tokens");
    v("seq_ratio_mean", seq_ratio, Reduce::kMean, Match::kClose, A,
      "mean of s_i = exp(mean_t log ratio) when each response's mini-batch was updated (every loss reports it)");
    v("seq_ratio_min", seq_ratio_min, Reduce::kMin, Match::kClose, A, "smallest s_i (0 when nothing was updated)");
    v("seq_ratio_max", seq_ratio_max, Reduce::kMax, Match::kClose, A, "largest s_i (0 when nothing was updated)");
    v("first_minibatch_ratio_dev", first_minibatch_ratio_dev, Reduce::kMax, Match::kClose, A,
      "max |s_i - 1| over the first mini-batch: 0 with old_logprobs recompute");
    v("clip_seq_low", clip_seq_low, Reduce::kMean, Match::kClose, A,
      "fraction of updated responses clipped on the low side (ratio < 1 - eps_low with A < 0); for token-level "
      "losses a response counts if any of its tokens was clipped");
    v("clip_seq_high", clip_seq_high, Reduce::kMean, Match::kClose, A,
      "fraction clipped on the high side (ratio > 1 + eps_high with A > 0)");
    v("clip_seq_frac", clip_seq, Reduce::kMean, Match::kClose, A, "clip_seq_low + clip_seq_high");
    v("clip_tok_low", clip_tok_low, Reduce::kMean, Match::kClose, A,
      "fraction of response tokens whose gradient was clipped away on the low side (GSPO: every token of a "
      "clipped response)");
    v("clip_tok_high", clip_tok_high, Reduce::kMean, Match::kClose, A, "the same on the high side");
    v("clip_tok_frac", clip_tok, Reduce::kMean, Match::kClose, A, "clip_tok_low + clip_tok_high");
    v("loss", loss, Reduce::kMean, Match::kClose, A, "mean per-sequence loss (policy term + KL term)");
    v("kl", kl, Reduce::kMean, Match::kClose, Shown::kKl,
      "mean over sequences of the per-token mean KL to the reference model (what the KL term penalises)");
    v("kl_seq", kl_seq, Reduce::kMean, Match::kClose, Shown::kKl,
      "mean over sequences of the summed per-token KL: the sequence-level KL estimate");
    v("entropy", entropy, Reduce::kMean, Match::kClose, A,
      "mean token entropy of pi_theta at the log-prob temperature during the update");
    v("policy_token_frac", policy_tokens, Reduce::kMean, Match::kClose, Shown::kPolicyMask,
      "fraction of the updated response tokens in the policy term (after top_entropy_quantile and mis rejection)");
    v("mismatch_logprob_diff_mean", mismatch_diff, Reduce::kMean, Match::kClose, Shown::kMismatch,
      "mean over sampled tokens of log pi_train - log pi_sampler (trainer at the step-start weights)");
    v("mismatch_logprob_diff_max", mismatch_diff_abs_max, Reduce::kMax, Match::kNone, Shown::kMismatch,
      "largest |log pi_train - log pi_sampler| of a sampled token");
    v("is_weight_mean", is_weight, Reduce::kMean, Match::kClose, Shown::kMismatch,
      "mean importance weight pi_train / pi_sampler at algorithm.is_level, before truncation or rejection");
    v("is_weight_min", is_weight_min, Reduce::kMin, Match::kNone, Shown::kMismatch, "smallest importance weight");
    v("is_weight_max", is_weight_max, Reduce::kMax, Match::kNone, Shown::kMismatch, "largest importance weight");
    v("is_truncated_frac", is_truncated, Reduce::kMean, Match::kClose, Shown::kMismatch,
      "fraction of importance weights above algorithm.is_cap (tis truncates them, mis rejects them)");
    v("is_rejected_frac", is_rejected, Reduce::kMean, Match::kClose, Shown::kMismatch,
      "mis: fraction of importance weights outside [is_floor, is_cap], whose terms were rejected");
    v("grad_norm", grad_norm, Reduce::kSame, Match::kClose, A,
      "global gradient L2 norm before clipping, mean over the step's applied updates");
    v("grad_norm_max", grad_norm_max, Reduce::kSame, Match::kClose, A, "its largest value");
    v("lr", lr, Reduce::kSame, Match::kClose, A, "learning rate of the last update");
    v("optimizer_steps", optimizer_steps, Reduce::kSame, Match::kExact, A, "optimizer steps taken so far");
    v("skipped_updates", skipped_updates, Reduce::kSame, Match::kExact, A,
      "this step's updates dropped as non-finite (train.on_nonfinite skip)");
    v("dynamic_rounds", dynamic_rounds, Reduce::kSame, Match::kExact, Shown::kDynamic,
      "extra generation rounds of dynamic sampling this step");
    v("dynamic_prompts", dynamic_prompts, Reduce::kSame, Match::kExact, Shown::kDynamic,
      "prompts sampled this step over every round (prompts_per_step without extra rounds)");
    v("overlong_penalty_mean", overlong_penalty, Reduce::kMean, Match::kClose, Shown::kOverlong,
      "mean soft overlong penalty added to the rewards (<= 0; included in reward_mean)");
    v("overlong_penalized_frac", overlong_penalized, Reduce::kMean, Match::kExact, Shown::kOverlong,
      "fraction of responses longer than max_new_tokens - overlong_buffer");
    const auto T = Shown::kTools;
    v("tool_turns_mean", tool_turns, Reduce::kMean, Match::kExact, T,
      "assistant turns per episode, every sampled row (1: no tool call)");
    v("tool_turns_max", tool_turns_max, Reduce::kMax, Match::kExact, T, "most assistant turns of an episode");
    v("tool_calls_mean", tool_calls, Reduce::kMean, Match::kExact, T,
      "tool calls per episode (malformed calls included), every sampled row");
    v("tool_errors", tool_errors, Reduce::kSum, Match::kExact, T,
      "calls whose observation is a tool error (unknown tool, bad call, crash, timeout, too many calls), every rank");
    v("tool_timeouts", tool_timeouts, Reduce::kSum, Match::kExact, T, "of those, calls stopped by tools.timeout_s");
    v("observation_frac", observation_tokens, Reduce::kMean, Match::kExact, T,
      "share of the response tokens that the tools wrote (loss mask 0), every sampled row");
    v("time_tools_s", time_tools_s, Reduce::kLocal, Match::kNone, T,
      "seconds the tools ran, summed over rank 0's calls (they run on tools.workers threads while rows decode)");
    v("time_tools_wait_s", time_tools_wait_s, Reduce::kLocal, Match::kNone, T,
      "of rank 0's sampling time, seconds decoding stood still because every running row waited on a tool");
    const auto As = Shown::kAsync, St = Shown::kStale, Pa = Shown::kPartial;
    v("version_lag_mean", ColumnStat{&version_lag, Stat::kMean}, Reduce::kGather, Match::kExact, St,
      "policy versions between the weights that sampled a row (its first token, when a partial rollout carried it) "
      "and the weights it trains (this step's), mean over the step's rows (async.max_staleness bounds it)");
    v("version_lag_max", ColumnStat{&version_lag, Stat::kMax}, Reduce::kGather, Match::kExact, St,
      "the largest over the step's rows");
    v("spanned_rows_frac", spanned_rows, Reduce::kMean, Match::kExact, Pa,
      "share of the step's rows whose tokens more than one policy version sampled (carried across a step)");
    v("carried_rows", carried_rows, Reduce::kSum, Match::kExact, Pa,
      "rows still running when this step's batch was complete, carried to the next step, every rank");
    v("continued_tokens", continued_tokens, Reduce::kSum, Match::kExact, Pa,
      "tokens of carried rows prefilled again to continue them (the cost of recomputing their cache), every rank");
    v("time_rollout_wait_s", time_rollout_wait_s, Reduce::kLocal, Match::kNone, As,
      "seconds trainer 0 waited for its share of the batch from the rollout ranks (its idle time this step)");
    v("trainer_idle_frac", trainer_idle_frac, Reduce::kLocal, Match::kNone, As, "time_rollout_wait_s / time_step_s");
    v("rollout_idle_frac", rollout_idle, Reduce::kMean, Match::kNone, As,
      "the rollout ranks' seconds waiting for the trainers (the staleness bound, the weights) before this batch, "
      "over their seconds for it (waiting, receiving weights, sampling, scoring), every rollout rank");
    v("weight_sync_s", weight_sync_s, Reduce::kLocal, Match::kNone, As,
      "seconds trainer 0 spent after this step handing new weights to the rollout ranks (ZeRO-3 gather, cast, "
      "waiting for the previous weights to be taken; the transfer itself overlaps the next step); 0 when none was due");
    v("weight_sync_mb", weight_sync_mb, Reduce::kLocal, Match::kNone, As,
      "MB of weights sent to each rollout rank after this step (rollout dtype)");
    v("time_sample_s", time_sample_s, Reduce::kLocal, Match::kNone, A,
      "wall seconds sampling (with rollout ranks: rollout rank 0's, for this step's batch)");
    v("time_reward_s", time_reward_s, Reduce::kLocal, Match::kNone, A, "wall seconds scoring");
    v("reward_model_tokens", reward_model_tokens, Reduce::kSum, Match::kNone, Shown::kScoring,
      "tokens through the reward model and the judge this step, padding and a judge's own tokens included, every "
      "rank (scoring is a prefill: time_reward_s / these tokens is its cost)");
    v("reward_model_rows", reward_model_rows, Reduce::kSum, Match::kExact, Shown::kScoring,
      "rows put to the reward model and the judge this step (a row twice with both), every rank");
    v("reward_model_failed", reward_model_failed, Reduce::kSum, Match::kExact, Shown::kScoring,
      "of those, rows they could not score (longer than reward.model_max_tokens, a judge's {answer} on a row without "
      "one, a non-finite score, a judgement without a score): each got reward 0 from that scorer; a warning names the "
      "reason when it is half of the rows or more");
    v("distill_kl", distill_kl, Reduce::kMean, Match::kClose, Shown::kDistill,
      "mean over the updated rows' trained tokens of log pi_old - log pi_teacher of the sampled token: the k1 "
      "estimate of the per-token reverse KL to the teacher, which distillation drives down");
    v("distill_divergence", distill_divergence, Reduce::kMean, Match::kClose, Shown::kDistill,
      "distill.objective forward_kl or jsd: the divergence over the teacher's top-k, a token mean per sequence, "
      "averaged over the applied updates' sequences (what coef multiplies in the loss); 0 with reverse_kl");
    v("distill_teacher_share", distill_share, Reduce::kMean, Match::kClose, Shown::kDistill,
      "sum of |coef x teacher term| over the sum of it and |reward_weight x A_i|, over trained tokens: how much of "
      "the advantage comes from the teacher (1 with distill.reward_weight 0)");
    v("distill_failed_rows", distill_failed_rows, Reduce::kSum, Match::kExact, Shown::kDistill,
      "updated rows whose teacher log-probs were not finite on a trained token: they kept their reward term only "
      "(a warning names the step), every rank");
    v("distill_long_rows", distill_long_rows, Reduce::kSum, Match::kExact, Shown::kDistill,
      "updated rows longer (prompt + response) than the teacher's context (its max_seq_len): they kept their reward "
      "term only (a warning names the step), every rank");
    v("teacher_tokens", teacher_tokens, Reduce::kSum, Match::kExact, Shown::kDistill,
      "prompt and response tokens through the teacher this step (its micro-batches, padding included), every rank");
    v("time_teacher_s", time_teacher_s, Reduce::kLocal, Match::kNone, Shown::kDistill,
      "wall seconds of the teacher's passes (within time_old_logprobs_s)");
    v("time_old_logprobs_s", time_old_logprobs_s, Reduce::kLocal, Match::kNone, A,
      "wall seconds recomputing old (and reference) log-probs");
    v("time_update_s", time_update_s, Reduce::kLocal, Match::kNone, A, "wall seconds of the mini-batch updates");
    v("time_step_s", time_step_s, Reduce::kLocal, Match::kNone, A, "wall seconds of the whole step");
    v("sample_tokens", sample_tokens, Reduce::kSum, Match::kExact, A, "tokens generated by every rank");
    v("sample_tokens_per_s", sample_tokens_per_s, Reduce::kRate, Match::kNone, A,
      "generated tokens of every rank over rank 0's sampling time");
    v("train_tokens_per_s", train_tokens_per_s, Reduce::kRate, Match::kNone, A,
      "prompt + response tokens through forward and backward, every rank, over rank 0's update time");
    v("prompt_tokens_saved", prompt_tokens_saved, Reduce::kSum, Match::kNone, Shown::kShared,
      "train.shared_prefix: prompt tokens a pass over the step's rows does not run again (a packed group's prompt "
      "runs once for its rows), every rank; the old-log-prob, reference and update passes each save this many");
    v("pad_frac", pad_frac, Reduce::kMean, Match::kNone, A,
      "padding share of the update's forward/backward: (rows x columns - real tokens) / (rows x columns) summed "
      "over its micro-batches and ranks (prompt padding included); lowered by algorithm.micro_batch_tokens");
    v("peak_rss_mb", peak_rss_mb, Reduce::kMax, Match::kNone, A, "peak resident memory (largest rank)");
    v("peak_gpu_mb", peak_gpu_mb, Reduce::kMax, Match::kNone, Shown::kCuda,
      "peak bytes allocated by LibTorch's caching allocator on the model's GPU (largest rank)");
    v("peak_mb_rollout", peak_mb_rollout, Reduce::kMax, Match::kNone, A,
      "peak memory while sampling and scoring this step: the caching allocator's peak on a GPU, the process's "
      "resident memory on CPU (each phase resets the peak at its start; largest rank)");
    v("peak_mb_logprobs", peak_mb_logprobs, Reduce::kMax, Match::kNone, A,
      "the same while cutting the micro-batches and computing old (and reference) log-probs (0 with no rows)");
    v("peak_mb_update", peak_mb_update, Reduce::kMax, Match::kNone, A,
      "the same during the mini-batch updates (0 with no rows)");
    v("sample_graph_captures", sample_graph_captures, Reduce::kLocal, Match::kNone, Shown::kCuda,
      "CUDA graphs the sampler captured this step (rollout.cuda_graphs: one per rollout call, plus one after each "
      "compaction of finished rows, the pool in powers of two: at most 1 + log2(rows) a call; 0 with eager decode)");
    v("kv_cache_mb", kv_cache_mb, Reduce::kMax, Match::kNone, A,
      "MB of KV cache the sampler allocated (the largest at once; largest rank): rows x (longest prompt + "
      "max_new_tokens) columns without a budget, the slot pool under rollout.kv_cache_mb");
    v("rollout_slots", rollout_slots, Reduce::kLocal, Match::kNone, A,
      "rows of KV cache the sampler decoded with: the slot pool under a budget, else the rank's rows (rank 0)");
    v("rollout_slot_util", rollout_slot_util, Reduce::kMean, Match::kNone, A,
      "busy slot-steps over all slot-steps of the rollout (every rank): the share of the allocated cache rows that "
      "sampled a token of a running response at each sampling step; rows that ended early lower it, continuous "
      "batching raises it");
    v("prefill_tokens", prefill_tokens, Reduce::kSum, Match::kNone, A,
      "prompt columns run through prefill, padding included, every rank (each prompt once per rollout: its G "
      "samples share the prefill)");
    v("sample_host_transfers", sample_host_transfers, Reduce::kLocal, Match::kNone, A,
      "host<->device transfers of rank 0's decode loops this step: finished-flag reads at the sync interval, "
      "stop-string token reads, and the uploads of refills and compactions (slot state lives on the device)");
    v("sample_decode_steps", sample_decode_steps, Reduce::kLocal, Match::kNone, A,
      "decode steps of rank 0's sampler this step (transfers per decode step: sample_host_transfers / this)");
    v("train_host_reads", train_host_reads, Reduce::kLocal, Match::kNone, A,
      "device-to-host reads per update micro-batch on rank 0 (each stalls a GPU until its stream drains): the loss "
      "statistics with the loss value and the entropy sum in one copy (the pass's shapes come from the host); two "
      "more with top_entropy_quantile < 1. The CPU-measurable proxy of a GPU's host round trips");
    v("world_size", world_size, Reduce::kSame, Match::kNone, A, "ranks");
    v("time_comm_s", time_comm_s, Reduce::kLocal, Match::kNone, Shown::kMultiRank,
      "seconds in collectives this step (waits for slower ranks included)");
    v("comm_frac", comm_frac, Reduce::kLocal, Match::kNone, Shown::kMultiRank, "time_comm_s / time_step_s");
    v("comm_mb", comm_mb, Reduce::kLocal, Match::kNone, Shown::kMultiRank, "payload of the collectives in MB");
    v("comm_calls", comm_calls, Reduce::kLocal, Match::kNone, Shown::kMultiRank, "number of collectives");
    v("optimizer_state_mb_per_rank", optimizer_state_mb_per_rank, Reduce::kLocal, Match::kNone, A,
      "MB of AdamW moments this rank holds, read off the optimizer's tensors (1/world size of them with ZeRO-1)");
    v("model_state_mb_per_rank", model_state_mb_per_rank, Reduce::kLocal, Match::kNone, A,
      "MB of training state this rank holds at the step's end, read off the tensors: weights (training dtype), "
      "their gradients, float32 masters and their gradients (model.dtype bfloat16), AdamW moments and ZeRO-1's "
      "gradient shard; not the rollout's copy (gspo plan predicts it)");
    v("zero3_gathers", zero3_gathers, Reduce::kLocal, Match::kNone, Shown::kZero3,
      "decoder-layer weight gathers this step (forward passes, checkpoint recomputes, the rollout's whole copy)");
    v("zero3_prefetch_frac", zero3_prefetch_frac, Reduce::kLocal, Match::kNone, Shown::kZero3,
      "share of zero3_gathers already started (or the layer kept) before the layer was needed "
      "(distributed.zero3_overlap); the rest waited for their all-gather");
    v("ep_rollout_passes", ep_rollout_passes, Reduce::kMax, Match::kNone, Shown::kExperts,
      "the rollout's sampling passes (prefill, decode and append calls) this step of the rank that ran the most with "
      "rows of its own; each runs every MoE layer's exchange with the expert group");
    v("ep_rollout_idle_frac", ep_rollout_idle_frac, Reduce::kMax, Match::kNone, Shown::kExperts,
      "of the passes a rank took part in this step's rollout, the share it only served, its own sampling over while "
      "its group's was not (the largest over the ranks: how unevenly the ranks' rollouts ended)");
    v("moe_load_imbalance", moe_load_imbalance, Reduce::kLocal, Match::kNone, Shown::kMoe,
      "per MoE layer: the largest expert's share of routing slots times the number of experts in the last "
      "training forward (1 = balanced; padding tokens included; with distributed.expert_parallel, the experts the "
      "exchange routed, counted over the group)");
    v("moe_load_imbalance_max", moe_load_imbalance_max, Reduce::kLocal, Match::kNone, Shown::kMoe,
      "the largest of them");
    // Routing flips at near-ties of router scores, which rounding between world sizes can move: not compared.
    v("moe_routing_change_frac", moe_routing_change_frac, Reduce::kSame, Match::kNone, Shown::kRouting,
      "routing volatility (GSPO paper, section 5.3): the share of (response token, MoE layer) pairs of the step's "
      "updated rows whose top-k expert set after the step's last update differs from the one at the step's start "
      "(the old-log-prob pass), every rank's rows (algorithm.routing_metrics)");
    v("moe_routing_change_frac_layers", moe_routing_change_layers, Reduce::kSame, Match::kNone, Shown::kRouting,
      "the same per MoE layer, in layer order");
    v("moe_rollout_route_diff_frac", moe_rollout_route_diff, Reduce::kMean, Match::kNone, Shown::kRolloutRoutes,
      "algorithm.routing_replay rollout (R3): the share of (response token, MoE layer) pairs of the step's updated "
      "rows whose top-k expert set in the trainer's own routing at the step's start differs from the one the rollout "
      "ran (what R3 replays instead; every response token the rollout ran, all ranks)");
    v("time_routing_s", time_routing_s, Reduce::kLocal, Match::kNone, Shown::kRouting,
      "seconds measuring moe_routing_change_frac (one forward of the decoder layers over the step's rows)");
  }
};

// Every scalar row of the table in order (a Mean or a Rate as its two numbers; columns and lists left out): a rollout
// rank's figures for a batch, sent to a trainer with it.
std::vector<double> scalar_values(StepMetrics& m);
// Folds another StepMetrics' scalar_values into `m` by each row's Reduce: sums, means and rates added, extrema
// combined, kSame rows left as they are; kLocal figures (the sender's own, where `m` has none) added only with
// `take_local` (the first rollout rank's, as the table's "rank 0's figure").
void merge_scalars(StepMetrics& m, const std::vector<double>& values, bool take_local);

// Collective (every rank calls it): combines the ranks' metrics as each row's Reduce says. Afterwards every rank
// holds the job's values; kLocal rows and a Rate's seconds stay each rank's own. Nothing to do on one rank.
void reduce_across_ranks(StepMetrics& m, parallel::Comm& comm);

// The metrics.jsonl line (one JSON object, the table's order, optional rows only when shown), then `extra`'s fields
// (validation's, the steps it ran after).
std::string json_line(StepMetrics& m, const nlohmann::ordered_json* extra = nullptr);

// The console line of a step (train/report/report.cpp).
std::string progress_line(const StepMetrics& m, int64_t max_steps);

// `gspo config --metrics`: the table as Markdown (docs/metrics.md) or as a JSON list of {name, reduce, match,
// shown, doc} (read by tests/dist/compare_runs.py).
std::string metrics_reference_markdown();
std::string metrics_schema_json();

// Throws std::logic_error when a row's field type cannot take its reduction (e.g. a Column statistic marked kSum).
void check_metrics_table();

}  // namespace gspo::train
