// Partial rollouts (async.partial_rollout, docs/async.md), on the synchronous schedule (every rank samples, then
// trains) or on the rollout ranks (distributed.rollout_ranks, W of them here). Every sampling rank keeps
// config::prompts_in_flight / W groups being sampled. Each round tops them up from the cursor and samples them in one
// call (rollout::CallPlan) that stops as soon as prompts_per_step / W groups have ended in full and no group that
// cannot wait another step still runs; the step trains on the ended groups, oldest first, and the rows still running
// are carried: their tokens so far kept, continued by the next round's call under that step's weights (their KV cache
// recomputed by one prefill). The longest response of a batch no longer holds the step; its row is only delayed.
//
// Versions: a row's version (Scored::versions, what version_lag counts) is the version that sampled its first token;
// a group begun by version b is never trained after step b + async.max_staleness: a call does not stop while a group
// runs that batch j + 1 would train too late (prompts_in_flight is at most (max_staleness + 1) x prompts_per_step, so
// the oldest ended groups always fit a step; beside rollout ranks the schedule samples batches carry_steps() versions
// fresher to leave that room, async_schedule.h). pi_old is the sampler's
// per-token log-probs (each token's own version) or the recomputation algorithm.old_logprobs asks for.
//
// Noise: a group draws from the round that began it (rollout_noise of that version), each row its own hash, so a
// continued row draws what it would have drawn had its call not stopped. A resume (resume_carried) samples the carried
// groups again from their prompts, begun by the resumed version: their tokens so far are lost, their prompts are not.
#pragma once
#include <cstdint>
#include <vector>

#include "gspo/train/sources/rollout_source.h"

namespace gspo::train {

class PartialSource : public LocalSource {
 public:
  // Throws ConfigError when async.prompts_in_flight or rollout.prompts_per_step is not a multiple of the world size.
  PartialSource(const config::Config& cfg, model::Policy& policy, SamplingCopy* sampling_copy,
                const tokenizer::Tokenizer& tok, const std::vector<data::Example>& examples,
                const reward::Verifier& verifier, rollout::Sampler& sampler, parallel::Comm& comm);
  Scored next_round(data::Cursor& cursor, const RolloutId& id, StepMetrics& m) override;
  std::vector<int64_t> carried_examples() override;
  void resume_carried(const std::vector<int64_t>& examples) override;

 private:
  struct Group {
    int64_t example = 0;
    std::vector<int64_t> prompt;
    std::vector<rollout::RowSoFar> rows;  // group_size
    int64_t begun = -1;                   // the version that began it (-1: resumed, begun by the next round's)
    std::vector<int64_t> first, newest;   // per row: the versions of its first and latest tokens (-1: none yet)
    bool ended() const;
  };
  Group make_group(int64_t example, const rollout::NoiseKey& key, int64_t first_row) const;
  // Groups each rank begins this round: every rank's in-flight count topped up to in_flight_.
  std::vector<int64_t> fresh_per_rank() const;
  // next_round's steps: begin groups, sample every group in flight, pick the step's, keep the rest.
  rollout::NoiseKey top_up(data::Cursor& cursor, const RolloutId& id);
  rollout::RolloutBatch sample_in_flight(const rollout::NoiseKey& key, int64_t v, int64_t j, StepMetrics& m);
  std::vector<int64_t> step_groups() const;
  void carry_rest(const std::vector<int64_t>& order, int64_t j, StepMetrics& m);

  const int64_t in_flight_, quota_;  // groups per rank: being sampled, trained per step
  std::vector<Group> carry_;         // this rank's groups in flight, oldest first
  std::vector<int64_t> carried_per_rank_;  // every rank's carry_ size (known to all: equal but after a resume)
};

}  // namespace gspo::train
