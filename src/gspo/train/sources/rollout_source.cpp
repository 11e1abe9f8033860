#include "gspo/train/sources/rollout_source.h"

#include <torch/torch.h>

#include <algorithm>

#include "gspo/core/clock.h"
#include "gspo/env/episode.h"
#include "gspo/model/sampling_phase.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/reward/base/verifier.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/sources/sampling_copy.h"

namespace gspo::train {
namespace {

using core::Clock;

// The tool use of a round's episodes.
void record_tools(const env::EpisodeHook& hook, const rollout::RolloutBatch& b, StepMetrics& m) {
  const auto& rows = hook.counts();
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    const auto& e = rows.at(r);  // (turns begun: a response cut mid-turn counts that turn)
    m.tool_turns.sum += static_cast<double>(e.turns), m.tool_turns.count += 1;
    m.tool_calls.sum += static_cast<double>(e.calls), m.tool_calls.count += 1;
    m.tool_turns_max = std::max(m.tool_turns_max, static_cast<double>(e.turns));
    m.tool_errors += e.errors;
    m.tool_timeouts += e.timeouts;
    m.observation_tokens.sum += static_cast<double>(e.observation_tokens);
    m.observation_tokens.count += static_cast<double>(b.response_lengths[r]);
  }
  m.time_tools_s += hook.tool_seconds();
  m.time_tools_wait_s += hook.wait_seconds();
}

}  // namespace

void record_sampler(const rollout::SamplerStats& st, StepMetrics& m) {
  m.sample_graph_captures += st.graph_captures;
  m.kv_cache_mb = std::max(m.kv_cache_mb, st.kv_bytes / 1048576.0);
  m.rollout_slots = std::max(m.rollout_slots, st.slots);
  m.rollout_slot_util.sum += static_cast<double>(st.busy_slot_steps);
  m.rollout_slot_util.count += static_cast<double>(st.slot_steps);
  m.prefill_tokens += st.prefill_tokens;
  m.sample_host_transfers += st.host_transfers;
  m.sample_decode_steps += st.decode_steps;
  m.continued_tokens += st.continued_tokens;
}

Scored score_batch(const config::Config& c, const reward::Verifier& verifier, rollout::RolloutBatch batch,
                   const std::vector<std::string>& graded, const std::vector<const data::Example*>& per_row,
                   const std::vector<data::Example>& all, const std::vector<reward::ToolUse>* uses, int64_t version,
                   StepMetrics& m) {
  const auto t = Clock::now();
  const auto before = verifier.scoring_totals();
  Scored s;
  for (auto& sc : reward::score_all(verifier, graded, per_row, c.reward.workers, uses)) {
    s.rewards.push_back(sc.reward);
    s.correct.push_back(sc.correct ? 1.0 : 0.0);
    s.components.push_back(std::move(sc.components));
  }
  // DAPO's soft overlong penalty: 0 up to max_new_tokens - buffer, then linear down to -overlong_penalty.
  const int64_t L_max = c.rollout.max_new_tokens, buffer = c.reward.overlong_buffer;
  const auto trained = batch.trained_tokens();  // max_new_tokens caps the model's own tokens
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    const int64_t L = trained[r];
    const double pen = buffer > 0 && L > L_max - buffer
                           ? c.reward.overlong_penalty * static_cast<double>(L_max - buffer - L) / static_cast<double>(buffer)
                           : 0.0;
    s.penalty.push_back(pen);
    s.rewards[r] += pen;
  }
  m.time_reward_s += core::seconds_since(t);
  const auto after = verifier.scoring_totals();
  m.reward_model_tokens += after.tokens - before.tokens;
  m.reward_model_rows += after.rows - before.rows;
  m.reward_model_failed += after.failed - before.failed;
  if (after.failed > before.failed) m.reward_model_failure = after.last_failure;
  s.versions.assign(s.rewards.size(), version);
  for (const auto* ex : per_row) {
    s.sources.push_back(static_cast<double>(ex->source_id));
    const bool ours = !all.empty() && ex >= all.data() && ex < all.data() + all.size();
    s.examples.push_back(ours ? static_cast<int64_t>(ex - all.data()) : -1);
  }
  s.batch = std::move(batch);
  return s;
}

rollout::NoiseKey rollout_noise(const config::Config& c, const RolloutId& id, int64_t first_row) {
  const int64_t rows_per_round = c.rollout.prompts_per_step * c.rollout.group_size;
  return {rollout::mix_seed(static_cast<uint64_t>(c.rollout.seed), static_cast<uint64_t>(id.version)),
          id.round * rows_per_round + first_row};
}

LocalSource::LocalSource(const config::Config& cfg, model::Policy& policy, SamplingCopy* sampling_copy,
                         const tokenizer::Tokenizer& tok, const std::vector<data::Example>& examples,
                         const reward::Verifier& verifier, rollout::Sampler& sampler, parallel::Comm& comm)
    : cfg_(cfg), policy_(policy), sampling_copy_(sampling_copy), tok_(tok), examples_(examples), verifier_(verifier),
      sampler_(sampler), comm_(comm) {}

void LocalSource::step_done(int64_t, StepMetrics&) {
  if (sampling_copy_) sampling_copy_->mark_stale();
}

void LocalSource::refresh_if_stale(StepMetrics& m) {
  if (sampling_copy_) m.time_sample_s += sampling_copy_->refresh();  // 0 until a step changes the weights again
}

InProcessSource::InProcessSource(const config::Config& cfg, model::Policy& policy, SamplingCopy* sampling_copy,
                                 const tokenizer::Tokenizer& tok, const std::vector<data::Example>& examples,
                                 const reward::Verifier& verifier, rollout::Sampler& sampler, parallel::Comm& comm,
                                 env::ToolEnv* tools)
    : LocalSource(cfg, policy, sampling_copy, tok, examples, verifier, sampler, comm), tools_(tools) {}

// Every round of every rank draws its own noise rows: rank r's rows of round k start at global row
// k * B * G + r * (B / W) * G (rollout_noise).
Scored InProcessSource::next_round(data::Cursor& cursor, const RolloutId& id, StepMetrics& m) {
  const auto& c = cfg_;
  const int64_t W = comm_.world_size(), B = c.rollout.prompts_per_step, G = c.rollout.group_size;
  const int64_t local_prompts = B / W;
  const int64_t first_row = comm_.rank() * local_prompts * G;
  refresh_if_stale(m);
  std::vector<const data::Example*> exs;
  std::vector<std::vector<int64_t>> prompts;
  const auto global = cursor.next(B);
  for (int64_t j = 0; j < local_prompts; ++j) {
    const auto& ex = examples_[global[comm_.rank() * local_prompts + j]];
    exs.push_back(&ex);
    prompts.push_back(tok_.encode_prompt(data::format_prompt(c.data, ex, env::shown_tools(tools_))));
  }
  auto t = Clock::now();
  std::vector<std::string> questions;
  for (const auto* ex : exs) questions.push_back(ex->prompt);
  auto sampled = [&] {
    model::SamplingPhase phase(sampler_.policy());  // ends before any other collective
    return env::sample(tools_, sampler_, prompts, std::move(questions), G, rollout_noise(c, id, first_row));
  }();
  const auto& batch = sampled.batch;
  m.time_sample_s += core::seconds_since(t);
  if (tools_) record_tools(tools_->hook, batch, m);
  record_sampler(sampler_.last_stats(), m);
  std::vector<const data::Example*> per_row;
  for (int64_t r = 0; r < batch.num_rows(); ++r) per_row.push_back(exs[r / G]);
  auto graded = sampled.graded();  // (a copy: the batch moves into the Scored)
  return score_batch(c, verifier_, std::move(sampled.batch), graded, per_row, examples_, sampled.tool_use(),
                     id.version, m);
}

}  // namespace gspo::train
