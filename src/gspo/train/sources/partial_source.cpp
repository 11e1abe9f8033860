#include "gspo/train/sources/partial_source.h"

#include <torch/torch.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <stdexcept>

#include "gspo/core/clock.h"
#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/model/sampling_phase.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/rollout/batch_merge.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::train {
namespace {

constexpr uint64_t kResumedNoise = 0x726573756d6564ULL;  // "resumed": the noise salt of groups a resume samples again

int64_t per_rank(const config::Config& c, int64_t groups, int64_t W, const char* key) {
  if (groups % W != 0)
    throw ConfigError(config::set_at(c, key) + key + " (" + std::to_string(groups) + ") must be a multiple of the " +
                      "world size " + std::to_string(W) + " with async.partial_rollout: every rank keeps the same "
                      "number of groups in flight");
  return groups / W;
}

}  // namespace

bool PartialSource::Group::ended() const {
  return std::none_of(rows.begin(), rows.end(), [](const auto& r) { return r.finish == rollout::Finish::kCarried; });
}

PartialSource::PartialSource(const config::Config& cfg, model::Policy& policy, SamplingCopy* sampling_copy,
                             const tokenizer::Tokenizer& tok, const std::vector<data::Example>& examples,
                             const reward::Verifier& verifier, rollout::Sampler& sampler, parallel::Comm& comm)
    : LocalSource(cfg, policy, sampling_copy, tok, examples, verifier, sampler, comm),
      in_flight_(per_rank(cfg, config::prompts_in_flight(cfg), comm.world_size(), "async.prompts_in_flight")),
      quota_(per_rank(cfg, cfg.rollout.prompts_per_step, comm.world_size(), "rollout.prompts_per_step")),
      carried_per_rank_(comm.world_size(), 0) {}

PartialSource::Group PartialSource::make_group(int64_t example, const rollout::NoiseKey& key, int64_t first_row) const {
  const int64_t G = cfg_.rollout.group_size;
  Group g;
  g.example = example;
  g.prompt = tok_.encode_prompt(data::format_prompt(cfg_.data, examples_[example]));
  for (int64_t k = 0; k < G; ++k)
    g.rows.push_back({{}, {}, rollout::Finish::kCarried, rollout::row_hash(key, first_row + k), {}});
  g.first.assign(G, -1);
  g.newest.assign(G, -1);
  return g;
}

std::vector<int64_t> PartialSource::fresh_per_rank() const {
  std::vector<int64_t> fresh;
  for (auto carried : carried_per_rank_) fresh.push_back(std::max<int64_t>(0, in_flight_ - carried));
  return fresh;
}

// Top up: every rank begins fresh groups from the shared cursor (its slice, in rank order) and draws their noise from
// this round's rows; groups a resume handed back begin now, with noise of their own. Returns the fresh groups' key.
rollout::NoiseKey PartialSource::top_up(data::Cursor& cursor, const RolloutId& id) {
  const int64_t G = cfg_.rollout.group_size, v = id.version, rank = comm_.rank();
  const auto fresh = fresh_per_rank();
  const int64_t before = std::accumulate(fresh.begin(), fresh.begin() + rank, int64_t{0});
  const auto global = cursor.next(std::accumulate(fresh.begin(), fresh.end(), int64_t{0}));
  // Noise rows of batch j's fresh groups: [k F G, (k + 1) F G) of version v's key for round k (F: every rank's groups
  // in flight), so no two groups of a version share rows; with F = B these are rollout_noise's rows.
  auto key = rollout_noise(cfg_, {v, 0}, (id.round * comm_.world_size() * in_flight_ + before) * G);
  const rollout::NoiseKey resumed_key{rollout::mix_seed(key.seed, kResumedNoise),
                                      std::accumulate(carried_per_rank_.begin(), carried_per_rank_.begin() + rank,
                                                      int64_t{0}) * G};
  for (size_t i = 0, resumed = 0; i < carry_.size(); ++i) {
    if (carry_[i].begun >= 0) continue;
    carry_[i] = make_group(carry_[i].example, resumed_key, static_cast<int64_t>(resumed++) * G);
    carry_[i].begun = v;
  }
  for (int64_t f = 0; f < fresh[rank]; ++f) {
    carry_.push_back(make_group(global[before + f], key, f * G));
    carry_.back().begun = v;
  }
  return key;
}

// One call over every group in flight; it may stop once quota_ groups have ended and every group that would be too old
// for the batch after `batch` (j) has. The rows take what version v sampled.
rollout::RolloutBatch PartialSource::sample_in_flight(const rollout::NoiseKey& key, int64_t v, int64_t j,
                                                      StepMetrics& m) {
  const int64_t G = cfg_.rollout.group_size;
  rollout::CallPlan plan;
  plan.stop_after_groups = quota_;
  std::vector<std::vector<int64_t>> prompts;
  for (const auto& g : carry_) {
    prompts.push_back(g.prompt);
    plan.rows.insert(plan.rows.end(), g.rows.begin(), g.rows.end());
    plan.must_finish.push_back(j + 1 - g.begun > cfg_.async.max_staleness ? 1 : 0);  // batch j + 1 would be too late
  }
  auto t = core::Clock::now();
  auto batch = [&] {
    model::SamplingPhase phase(sampler_.policy());  // ends before any other collective
    return sampler_.generate(prompts, G, key, plan);
  }();
  m.time_sample_s += core::seconds_since(t);
  record_sampler(sampler_.last_stats(), m);

  auto lp = batch.behaviour_logprobs.accessor<float, 2>();
  for (size_t gi = 0; gi < carry_.size(); ++gi) {
    auto& g = carry_[gi];
    for (int64_t k = 0; k < G; ++k) {
      const int64_t r = static_cast<int64_t>(gi) * G + k;
      auto& row = g.rows[k];
      const auto& ids = batch.response_ids[r];
      if (ids.size() > row.ids.size()) {  // this version sampled tokens of it
        if (g.first[k] < 0) g.first[k] = v;
        g.newest[k] = v;
        // R3: its routes so far, its own copy (the batch's are freed with the step's rows); a row this call did not
        // extend keeps the ones it has
        if (batch.routes.defined()) {
          const int64_t P = batch.prompt_len, plen = static_cast<int64_t>(g.prompt.size());
          row.routes = batch.routes[r].narrow(0, P - plen, plen + static_cast<int64_t>(ids.size()) - 1).clone();
        }
      }
      row.ids = ids;
      row.logprobs.assign(lp[r].data(), lp[r].data() + ids.size());
      row.finish = batch.finish[r];
    }
  }
  return batch;
}

// The step's groups: the oldest quota_ of the ended ones (in flight order among equals), in flight order.
std::vector<int64_t> PartialSource::step_groups() const {
  std::vector<int64_t> order;
  for (size_t gi = 0; gi < carry_.size(); ++gi)
    if (carry_[gi].ended()) order.push_back(static_cast<int64_t>(gi));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return carry_[a].begun < carry_[b].begun; });
  if (static_cast<int64_t>(order.size()) < quota_)
    throw std::logic_error("partial rollouts: the call stopped with " + std::to_string(order.size()) +
                           " groups ended, fewer than the step's " + std::to_string(quota_));
  order.resize(quota_);
  std::sort(order.begin(), order.end());
  return order;
}

// Keeps the groups not in `order` (sorted) in flight, checking the staleness bound for batch j + 1.
void PartialSource::carry_rest(const std::vector<int64_t>& order, int64_t j, StepMetrics& m) {
  const int64_t n = static_cast<int64_t>(carry_.size());
  std::vector<Group> rest;
  for (int64_t gi = 0, o = 0; gi < n; ++gi) {
    if (o < quota_ && order[o] == gi) {
      ++o;
      continue;
    }
    if (j + 1 - carry_[gi].begun > cfg_.async.max_staleness)  // the bound holds by construction; say so if not
      throw std::logic_error("partial rollouts: a group begun by version " + std::to_string(carry_[gi].begun) +
                             " would train after batch " + std::to_string(carry_[gi].begun + cfg_.async.max_staleness));
    for (const auto& row : carry_[gi].rows) m.carried_rows += row.finish == rollout::Finish::kCarried;
    rest.push_back(std::move(carry_[gi]));
  }
  carry_ = std::move(rest);
  std::fill(carried_per_rank_.begin(), carried_per_rank_.end(), in_flight_ - quota_);
}

Scored PartialSource::next_round(data::Cursor& cursor, const RolloutId& id, StepMetrics& m) {
  // Round k of version v is batch v + k: the batch the synchronous schedule trains at step v (k = 0), or the one the
  // rollout ranks sample by version v ahead of the trainers (async_schedule.h).
  const int64_t G = cfg_.rollout.group_size, v = id.version, j = id.version + id.round;
  refresh_if_stale(m);
  const auto key = top_up(cursor, id);
  auto batch = sample_in_flight(key, v, j, m);
  const auto order = step_groups();
  std::vector<rollout::GroupRef> refs;
  std::vector<const data::Example*> per_row;
  std::vector<int64_t> versions;
  int64_t spanned = 0;
  for (auto gi : order) {
    refs.push_back({0, gi});
    const auto& g = carry_[gi];
    for (int64_t k = 0; k < G; ++k) {
      per_row.push_back(&examples_[g.example]);
      versions.push_back(g.first[k] >= 0 ? g.first[k] : g.begun);
      spanned += g.first[k] >= 0 && g.first[k] != g.newest[k];
    }
  }
  auto taken = rollout::merge_groups({&batch}, refs, policy_.manifest().pad_token_id);
  carry_rest(order, j, m);
  m.spanned_rows.sum += static_cast<double>(spanned);
  m.spanned_rows.count += static_cast<double>(quota_ * G);

  auto graded = taken.response_text;
  auto s = score_batch(cfg_, verifier_, std::move(taken), graded, per_row, examples_, nullptr, v, m);
  s.versions = std::move(versions);
  return s;
}

std::vector<int64_t> PartialSource::carried_examples() {
  std::vector<int64_t> mine;
  for (const auto& g : carry_) mine.push_back(g.example);
  // Ranks carry equally many groups after every step; padded with -1 all the same, so a gather never mismatches.
  const int64_t most = static_cast<int64_t>(comm_.max(static_cast<double>(mine.size())));
  if (most == 0) return {};
  mine.resize(most, -1);
  auto all = comm_.all_gather(torch::tensor(mine, torch::kLong)).contiguous();
  std::vector<int64_t> out;
  std::copy_if(all.data_ptr<int64_t>(), all.data_ptr<int64_t>() + all.numel(), std::back_inserter(out),
               [](int64_t e) { return e >= 0; });
  return out;
}

void PartialSource::resume_carried(const std::vector<int64_t>& examples) {
  const int64_t W = comm_.world_size(), room = W * (in_flight_ - quota_);
  const int64_t E = std::min<int64_t>(static_cast<int64_t>(examples.size()), room);
  if (static_cast<int64_t>(examples.size()) > room)
    log::warn("partial rollouts: the checkpoint carried {} groups, more than this config keeps between steps ({}); "
              "the last {} are skipped this epoch", examples.size(), room,
              static_cast<int64_t>(examples.size()) - room);
  carry_.clear();
  std::fill(carried_per_rank_.begin(), carried_per_rank_.end(), 0);
  for (int64_t i = 0; i < E; ++i) {  // round robin over the ranks, sampled again from the prompt
    ++carried_per_rank_[i % W];
    if (i % W != comm_.rank()) continue;
    if (examples[i] >= static_cast<int64_t>(examples_.size()))
      throw IoError("partial rollouts: the checkpoint carries example " + std::to_string(examples[i]) +
                    ", past the " + std::to_string(examples_.size()) + " examples of this dataset");
    Group g;
    g.example = examples[i];  // (made whole, with its noise, by the next round)
    carry_.push_back(std::move(g));
  }
}

}  // namespace gspo::train
