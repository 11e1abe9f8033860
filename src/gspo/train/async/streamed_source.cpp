#include "gspo/rollout/sampling_config.h"
#include "gspo/train/async/streamed_source.h"

#include <torch/torch.h>

#include "gspo/core/clock.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/train/async/scored_wire.h"
#include "gspo/train/engines/update_engine.h"

namespace gspo::train {
namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}

StreamedSource::StreamedSource(const config::Config& cfg, parallel::Comm& link, parallel::Comm& trainers,
                               model::Policy& policy, UpdateEngine& engine, int64_t start, const data::Cursor& cursor,
                               const model::LoraAdapters* lora)
    : cfg_(cfg), link_(link), trainers_(trainers), policy_(policy), engine_(engine), lora_(lora),
      layout_(cfg, link.world_size()), start_(start), asked_(start), received_(start), sender_(link, kTagWeights) {
  ask(start, &cursor, nullptr);
}

int64_t StreamedSource::asked_up_to(int64_t version) const {
  int64_t j = asked_;
  while (j < cfg_.train.max_steps && sampling_version(j, cfg_.async, start_, config::carry_steps(cfg_)) <= version) ++j;
  return j;
}

// Every trainer computes the same schedule; with ZeRO-3 every trainer takes part in gathering the weights, trainer 0
// sends them.
void StreamedSource::ask(int64_t version, const data::Cursor* cursor, StepMetrics* m) {
  const int64_t upto = asked_up_to(version);
  if (upto == asked_) return;
  const auto t = core::Clock::now();
  double bytes = 0;
  std::vector<int64_t> peers;
  for (int64_t r = 0; r < layout_.rollouts; ++r) peers.push_back(layout_.rollout_world_rank(r));
  {
    const WholeWeights whole(engine_, lora_ == nullptr);  // adapters go alone: the base is not gathered for them
    if (trainers_.rank() == 0 && lora_)
      bytes = sender_.send(lora_->parameters(), peers, at::kFloat, cfg_.distributed.bucket_mb * kMiB);
    else if (trainers_.rank() == 0)
      bytes = sender_.send(policy_.parameters(), peers, rollout::sampling_dtype(cfg_), cfg_.distributed.bucket_mb * kMiB);
  }
  if (trainers_.rank() == 0) {
    while (!controls_.empty() && controls_.front().ready()) controls_.front().wait(), controls_.pop_front();
    for (int64_t j = asked_; j < upto; ++j) {
      Control c{Control::kSample, j, version, j == asked_ ? 1 : 0};
      if (cursor && j == asked_) c.epoch = cursor->epoch(), c.position = cursor->position();
      const auto msg = to_tensor(c);
      for (int64_t peer : peers) controls_.push_back(link_.send_async(msg, peer, kTagControl, "asking for a batch"));
    }
  }
  asked_ = upto;
  if (m) {
    m->weight_sync_s += core::seconds_since(t);
    m->weight_sync_mb += bytes / kMiB;
  }
}

Scored StreamedSource::next_round(data::Cursor& cursor, const RolloutId& id, StepMetrics& m) {
  const int64_t j = id.version;
  if (id.round != 0 || j != received_ || j >= asked_)
    throw std::logic_error("StreamedSource: batch " + std::to_string(j) + " round " + std::to_string(id.round) +
                           " is not the next asked for (" + std::to_string(received_) + " of [" +
                           std::to_string(start_) + ", " + std::to_string(asked_) + "))");
  const auto t = core::Clock::now();
  const int64_t me = trainers_.rank();
  const int64_t pad = policy_.manifest().pad_token_id;
  std::vector<Scored> pieces;
  for (int64_t r = 0; r < layout_.rollouts; ++r) {
    const auto [first, last] = layout_.shared(r, me);
    if (first >= last) continue;
    const int64_t src = layout_.rollout_world_rank(r);
    auto head = torch::empty({2}, torch::kLong);
    link_.recv_async(head, src, kTagBatch, "waiting for a batch from a rollout rank", cfg_.async.wait_timeout_s).wait();
    if (head[0].item<int64_t>() != j)
      throw DistributedError("trainer " + std::to_string(me) + ": rollout rank " + std::to_string(src) +
                             " sent batch " + std::to_string(head[0].item<int64_t>()) + " where batch " +
                             std::to_string(j) + " was due");
    auto bytes = torch::empty({head[1].item<int64_t>()}, torch::kUInt8);
    link_.recv_async(bytes, src, kTagBatch, "receiving a batch from a rollout rank", cfg_.async.wait_timeout_s).wait();
    auto share = unpack_share(bytes);
    if (share.batch != j || share.scored.batch.num_rows() != (last - first) * cfg_.rollout.group_size)
      throw DistributedError("trainer " + std::to_string(me) + ": rollout rank " + std::to_string(src) +
                             " sent " + std::to_string(share.scored.batch.num_rows()) + " rows of batch " +
                             std::to_string(share.batch) + " where " +
                             std::to_string((last - first) * cfg_.rollout.group_size) + " rows of batch " +
                             std::to_string(j) + " were due");
    if (!share.metrics.empty()) merge_scalars(m, share.metrics, r == 0);
    pieces.push_back(std::move(share.scored));
  }
  m.time_rollout_wait_s += core::seconds_since(t);
  cursor.next(cfg_.rollout.prompts_per_step);  // the rollout ranks took these prompts for batch j
  ++received_;
  return join_groups(std::move(pieces), pad);
}

void StreamedSource::step_done(int64_t version, StepMetrics& m) { ask(version, nullptr, &m); }

void StreamedSource::finish(bool interrupted) {
  if (finished_) return;
  finished_ = true;
  if (trainers_.rank() == 0) {
    Control stop{Control::kStop, asked_};
    stop.interrupted = interrupted ? 1 : 0;
    const auto msg = to_tensor(stop);
    for (int64_t r = 0; r < layout_.rollouts; ++r)
      controls_.push_back(link_.send_async(msg, layout_.rollout_world_rank(r), kTagControl, "stopping the rollout ranks"));
  }
  // Batches asked for and not trained on (an interrupt) are taken and dropped, so no rollout rank waits on a send.
  const int64_t dropped = asked_ - received_;
  data::Cursor scratch(1, false, 0);
  for (int64_t j = received_; j < asked_; ++j) {
    StepMetrics ignored;
    next_round(scratch, {j, 0}, ignored);
  }
  if (dropped > 0 && trainers_.rank() == 0)
    log::info("dropped {} batch(es) the rollout ranks had sampled ahead (steps {}..{}); a resume samples them again",
              dropped, asked_ - dropped + 1, asked_);
  for (auto& c : controls_) c.wait();
  controls_.clear();
  sender_.wait();
}

}  // namespace gspo::train
