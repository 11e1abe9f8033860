// Where a step's scored rollout comes from. The step pulls generation rounds from a RolloutSource (dynamic sampling
// may pull several) and trains on them; it does not sample itself. The in-process source samples with the policy (or
// its sampling copy) and scores with the verifier; partial rollouts (partial_source.h: groups carried between batches)
// and the trainers' end of asynchronous rollout ranks (train/async) implement the same interface.
//
// Noise is keyed by the round's RolloutId, not by the step that trains on it: the policy version whose weights
// sample the round and the round's number among that version's rounds. In a synchronous run the version is the
// step, so the noise (and every sample) is what it was when it was keyed by the step; a round sampled ahead by an
// older version keeps its tokens whichever step consumes it.
#pragma once
#include <cstdint>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/data/cursor.h"
#include "gspo/data/example.h"
#include "gspo/rollout/noise.h"
#include "gspo/rollout/sampler.h"
#include "gspo/train/metrics/metrics.h"

namespace gspo::parallel { class Comm; }
namespace gspo::model { class Policy; }
namespace gspo::reward { class Verifier; struct ToolUse; }
namespace gspo::tokenizer { class Tokenizer; }
namespace gspo::env { struct ToolEnv; }

namespace gspo::train {

// This rank's rows of a rollout with their scores (after dynamic sampling and reward shaping, for a step's batch).
struct Scored {
  rollout::RolloutBatch batch;
  std::vector<double> rewards, correct;
  std::vector<double> penalty;                  // soft overlong penalty per row (included in rewards)
  std::vector<std::vector<double>> components;  // reward.components: per row, each component's reward
  std::vector<int64_t> versions;  // per row: the policy version whose weights sampled it (RolloutId::version)
  std::vector<double> sources;    // per row: its row's data source id (Example::source_id), -1 = none
  std::vector<int64_t> examples;  // per row: the prompt's index in the run's training examples (every rank's same
                                  // list), -1 = unknown; what a distillation teacher re-renders in its own format
};

// Names one generation round: the policy version that samples it (rollout steps completed when its weights were
// taken) and its number among that version's rounds (0, then dynamic sampling's extra rounds).
struct RolloutId {
  int64_t version = 0;
  int64_t round = 0;
};

// The noise of round `id` for the rank whose rows start at global row `first_row` of a round: seed
// mix(rollout.seed, version), rows offset by round x prompts_per_step x group_size (rollout/noise.h).
rollout::NoiseKey rollout_noise(const config::Config& cfg, const RolloutId& id, int64_t first_row);

class RolloutSource {
 public:
  virtual ~RolloutSource() = default;
  // Collective. This rank's share of round `id`: rollout.prompts_per_step / world_size prompts taken from `cursor`
  // (advanced identically on every rank), group_size samples each, scored, the soft overlong penalty applied.
  virtual Scored next_round(data::Cursor& cursor, const RolloutId& id, StepMetrics& m) = 0;
  // Whether rounds are sampled in this process from the policy (the step then gathers ZeRO-3's whole weights).
  virtual bool samples_here() const { return true; }
  // Collective over the trainers, after each rollout step (its optimizer steps done): `version` = rollout steps
  // completed. A source sampling with its own copy of the weights takes the new ones before its next round; a source
  // fed by other ranks sends them the new weights when they need them (recorded in `m`).
  virtual void step_done(int64_t version, StepMetrics& m) { (void)version, (void)m; }
  // Collective, once after the last step (or an interrupt): a source fed by other ranks stops them and takes the
  // batches still in flight. `interrupted`: the run stops early.
  virtual void finish(bool interrupted) { (void)interrupted; }
  // Collective. Partial rollouts: the examples of the groups this source carries into the next step, every rank's
  // in rank order (what a checkpoint keeps); empty when it carries none. A resume hands them back to resume_carried on
  // every rank, before the first round.
  virtual std::vector<int64_t> carried_examples() { return {}; }
  virtual void resume_carried(const std::vector<int64_t>& examples) { (void)examples; }
};

// What in-process sources share: a call's sampler statistics go into the step's metrics; a batch's rows (row r
// answering per_row[r], `graded` its text the verifier sees, `uses` its tool use or null) are scored, DAPO's soft
// overlong penalty applied, into a Scored whose rows were all sampled by `version`.
void record_sampler(const rollout::SamplerStats& st, StepMetrics& m);
// `all`: the run's training examples, which per_row points into (Scored::examples).
Scored score_batch(const config::Config& c, const reward::Verifier& verifier, rollout::RolloutBatch batch,
                   const std::vector<std::string>& graded, const std::vector<const data::Example*>& per_row,
                   const std::vector<data::Example>& all, const std::vector<reward::ToolUse>* uses, int64_t version,
                   StepMetrics& m);

class SamplingCopy;

// A source that samples in this process with `sampler` (over the policy, or over `sampling_copy` when rollout.dtype
// differs or adapters train: it takes the trained weights before the first round after each step_done()) and scores
// with `verifier`: what InProcessSource and PartialSource (partial_source.h) share. Everything is owned by the caller.
class LocalSource : public RolloutSource {
 public:
  void step_done(int64_t, StepMetrics&) override;

 protected:
  LocalSource(const config::Config& cfg, model::Policy& policy, SamplingCopy* sampling_copy,
              const tokenizer::Tokenizer& tok, const std::vector<data::Example>& examples,
              const reward::Verifier& verifier, rollout::Sampler& sampler, parallel::Comm& comm);
  // The sampling copy takes the trained weights when a step changed them (timed into time_sample_s).
  void refresh_if_stale(StepMetrics& m);

  const config::Config& cfg_;
  model::Policy& policy_;
  SamplingCopy* sampling_copy_;
  const tokenizer::Tokenizer& tok_;
  const std::vector<data::Example>& examples_;
  const reward::Verifier& verifier_;
  rollout::Sampler& sampler_;
  parallel::Comm& comm_;
};

// Samples each round's prompts whole, scoring on reward.workers threads. With `tools` (tools.list set) the rows are
// multi-turn episodes (env/episode.h) and the verifier grades each one's final assistant turn.
class InProcessSource : public LocalSource {
 public:
  InProcessSource(const config::Config& cfg, model::Policy& policy, SamplingCopy* sampling_copy,
                  const tokenizer::Tokenizer& tok, const std::vector<data::Example>& examples,
                  const reward::Verifier& verifier, rollout::Sampler& sampler, parallel::Comm& comm,
                  env::ToolEnv* tools = nullptr);
  Scored next_round(data::Cursor& cursor, const RolloutId& id, StepMetrics& m) override;

 private:
  env::ToolEnv* tools_;
};

}  // namespace gspo::train
