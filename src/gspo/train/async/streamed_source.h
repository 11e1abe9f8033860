// The trainers' RolloutSource of asynchronous training (distributed.rollout_ranks > 0, docs/async.md): scored
// batches arrive from the rollout ranks over the job's process group, and trainer 0 asks for each batch, with the
// weights it must be sampled by, on the schedule of async_schedule.h.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "gspo/parallel/weight_sync.h"
#include "gspo/train/async/async_schedule.h"
#include "gspo/train/sources/rollout_source.h"

namespace gspo::model { class LoraAdapters; }

namespace gspo::train {

class UpdateEngine;

class StreamedSource : public RolloutSource {
 public:
  // `link`: the world group (trainers and rollout ranks); `trainers`: the trainers' group (its rank is this
  // trainer's). `start`: the rollout steps completed (the run's or the resume's start), `cursor` the data position
  // there. Trainer 0 asks for the first batches at once, with the current weights.
  // `lora` (model.lora_rank > 0): the weights sent are the adapters alone, in float32 (the rollout ranks merge them
  // into their copy of the base): r (in + out) a weight instead of out x in.
  StreamedSource(const config::Config& cfg, parallel::Comm& link, parallel::Comm& trainers, model::Policy& policy,
                 UpdateEngine& engine, int64_t start, const data::Cursor& cursor,
                 const model::LoraAdapters* lora = nullptr);
  // This trainer's share of batch id.version (the step about to train), waited for. Advances `cursor` over the
  // batch's prompts as the rollout ranks did.
  Scored next_round(data::Cursor& cursor, const RolloutId& id, StepMetrics& m) override;
  bool samples_here() const override { return false; }
  void step_done(int64_t version, StepMetrics& m) override;
  void finish(bool interrupted) override;

 private:
  // Trainer 0 asks for every batch that version `version` may sample, the weights of that version first (a batch
  // becomes askable only when a new version exists). `cursor`: the data position, sent with the first request.
  void ask(int64_t version, const data::Cursor* cursor, StepMetrics* m);
  int64_t asked_up_to(int64_t version) const;  // the batches [.., returned) that version may sample

  const config::Config& cfg_;
  parallel::Comm& link_;
  parallel::Comm& trainers_;
  model::Policy& policy_;
  UpdateEngine& engine_;
  const model::LoraAdapters* lora_;
  AsyncLayout layout_;
  int64_t start_;
  int64_t asked_ = 0;     // batches [start, asked_) were asked for
  int64_t received_ = 0;  // batches [start, received_) arrived
  parallel::WeightSender sender_;
  std::deque<parallel::Comm::Pending> controls_;  // control messages in flight
  bool finished_ = false;
};

}  // namespace gspo::train
