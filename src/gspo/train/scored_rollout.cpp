// A step's scored rollout: rounds pulled from the RolloutSource (rollout_source.h), DAPO's dynamic sampling (extra
// rounds until enough groups carry a learning signal), and the group advantages (reward scaling, reward components
// normalised after or before summing).
#include <torch/torch.h>

#include <algorithm>

#include "gspo/core/clock.h"
#include "gspo/parallel/comm.h"
#include "gspo/model/policy.h"
#include "gspo/reward/base/verifier.h"
#include "gspo/rollout/batch_merge.h"
#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/rank_share.h"
#include "gspo/train/step.h"

namespace gspo::train {
namespace {

using core::Clock;

// Whether group g of `s` has rewards that are not all equal (a learning signal; algo::group_advantages calls the
// others zero-variance).
bool has_signal(const Scored& s, int64_t g, int64_t G) {
  for (int64_t i = 1; i < G; ++i)
    if (s.rewards[g * G + i] != s.rewards[g * G]) return true;
  return false;
}

// The whole-batch std of one per-row column over every rank (rank order = global row order).
double global_std(parallel::Comm& comm, const std::vector<double>& column, bool sample_std) {
  auto all = comm.all_gather(torch::tensor(column, torch::kDouble));
  return algo::batch_std_of(all, sample_std);
}

}  // namespace

// The groups with a learning signal, in round order, up to this rank's share of the batch; a batch still short is
// filled with the first rounds' groups without one (their advantages are 0), so every rank keeps whole, equal shares.
Scored StepRunner::keep_signal_groups(std::vector<Scored>& rounds) {
  const int64_t G = p_.cfg.rollout.group_size;
  const int64_t quota = prompts_per_rank(p_.cfg, p_.comm.world_size());
  std::vector<rollout::GroupRef> chosen, filler;
  for (int64_t k = 0; k < static_cast<int64_t>(rounds.size()); ++k)
    for (int64_t g = 0; g < rounds[k].batch.num_rows() / G; ++g)
      (has_signal(rounds[k], g, G) ? chosen : filler).push_back({k, g});
  if (static_cast<int64_t>(chosen.size()) > quota) chosen.resize(quota);
  for (size_t i = 0; static_cast<int64_t>(chosen.size()) < quota; ++i) chosen.push_back(filler.at(i));
  std::vector<const rollout::RolloutBatch*> batches;
  for (const auto& r : rounds) batches.push_back(&r.batch);
  Scored out;
  out.batch = rollout::merge_groups(batches, chosen, p_.policy.manifest().pad_token_id);
  for (const auto& ref : chosen)
    for (int64_t i = 0; i < G; ++i) {
      const auto& src = rounds[ref.batch];
      const int64_t r = ref.group * G + i;
      out.rewards.push_back(src.rewards[r]);
      out.correct.push_back(src.correct[r]);
      out.penalty.push_back(src.penalty[r]);
      out.components.push_back(src.components[r]);
      out.versions.push_back(src.versions[r]);
      out.sources.push_back(src.sources[r]);
      out.examples.push_back(src.examples.empty() ? -1 : src.examples[r]);
    }
  return out;
}

Scored StepRunner::sample_and_score(Progress& progress, StepMetrics& m) {
  const auto& c = p_.cfg;
  const int64_t G = c.rollout.group_size, quota = prompts_per_rank(c, p_.comm.world_size());
  // A synchronous run samples with the weights of this step: version = the steps completed.
  auto round = [&](int64_t k) { return p_.source.next_round(progress.cursor, {progress.step, k}, m); };
  std::vector<Scored> rounds;
  rounds.push_back(round(0));
  m.dynamic_prompts = c.rollout.prompts_per_step;
  if (!c.rollout.dynamic_sampling) return std::move(rounds.front());
  int64_t signal = 0;  // groups with a signal over the rounds so far
  auto count = [&](const Scored& r) {
    for (int64_t g = 0; g < r.batch.num_rows() / G; ++g) signal += has_signal(r, g, G) ? 1 : 0;
  };
  count(rounds.front());
  // Every rank takes part in every round (the cursor is shared), until none is short or the rounds run out.
  while (m.dynamic_rounds < c.rollout.dynamic_max_rounds && p_.comm.any(signal < quota)) {
    ++m.dynamic_rounds;
    rounds.push_back(round(m.dynamic_rounds));
    count(rounds.back());
    m.dynamic_prompts += c.rollout.prompts_per_step;
  }
  if (rounds.size() == 1 && signal == quota) return std::move(rounds.front());
  return keep_signal_groups(rounds);
}

algo::Advantages StepRunner::advantages(const Scored& s) {
  const auto& a = p_.cfg.algorithm;
  const int64_t G = p_.cfg.rollout.group_size;
  auto opts = adv_opts_;
  const auto rewards = torch::tensor(s.rewards, torch::kDouble);
  const bool batch_scale = opts.scale == algo::RewardScale::kBatch;  // group_norm only (config validation)
  if (a.component_norm == config::ComponentNorm::kAfterSum || s.rewards.empty()) {
    if (batch_scale) opts.batch_std = global_std(p_.comm, s.rewards, opts.sample_std);
    return algo::group_advantages(rewards, G, opts);
  }
  // before_sum: each component's advantages, weighted and summed; the overlong penalty counts as one more component.
  auto weights = p_.verifier.component_weights();
  const bool penalised = p_.cfg.reward.overlong_buffer > 0;
  if (penalised) weights.push_back(1.0);
  std::vector<at::Tensor> comps;
  std::vector<double> stds;
  for (size_t k = 0; k < weights.size(); ++k) {
    std::vector<double> col;
    for (size_t r = 0; r < s.rewards.size(); ++r) col.push_back(k < s.components[r].size() ? s.components[r][k] : s.penalty[r]);
    if (batch_scale) stds.push_back(global_std(p_.comm, col, opts.sample_std));
    comps.push_back(torch::tensor(col, torch::kDouble));
  }
  return algo::component_advantages(comps, weights, rewards, G, opts, stds);
}

}  // namespace gspo::train
