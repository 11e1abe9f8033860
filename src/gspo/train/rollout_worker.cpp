#include "gspo/rollout/sampling_config.h"
#include "gspo/train/rollout_worker.h"

#include <torch/torch.h>

#include <deque>
#include <optional>

#include "gspo/core/clock.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/weight_sync.h"
#include "gspo/train/setup/assembly.h"
#include "gspo/train/async/async_schedule.h"
#include "gspo/train/sources/rollout_source.h"
#include "gspo/train/sources/sampling_copy.h"
#include "gspo/train/async/scored_wire.h"

namespace gspo::train {

struct RolloutWorker::Impl {
  config::Config cfg;  // the run's copy: what the loaded model resolves (data.chat_template auto) in
  parallel::Comm& group;  // the rollout ranks
  parallel::Comm& link;   // the world
  AsyncLayout layout;
  // The policy frozen in the sampling dtype, the base with model.lora_rank > 0, its adapters (what trainer 0 sends)
  // and the sampling copy with them merged (what samples then), the tokenizer, rows, verifier, sampler and tools.
  std::optional<Assembly> a;
  std::unique_ptr<RolloutSource> source;  // in-process sampling, or partial rollouts carrying groups between batches
  std::deque<std::pair<at::Tensor, parallel::Comm::Pending>> sends;  // batch shares in flight (kept alive)

  Impl(const config::Config& c, const Placement& where)
      : cfg(c), group(*where.comm), link(*where.link), layout(c, where.link->world_size()) {}
  void send_shares(int64_t batch, const Scored& s, std::vector<double> metrics);
};

RolloutWorker::RolloutWorker(const config::Config& cfg_in, const Placement& where) {
  if (!where.comm || !where.link) throw std::invalid_argument("RolloutWorker: Placement needs comm and link");
  impl_ = std::make_unique<Impl>(cfg_in, where);
  auto& s = *impl_;
  // the live rollout line on the first rollout rank
  s.a.emplace(s.cfg, Role::rollout_rank(s.group.is_main(), s.cfg.logging.progress && s.group.is_main()), where.device,
              s.group);
  s.source = s.a->local_source(s.cfg, s.group);
}

RolloutWorker::~RolloutWorker() = default;

// Each trainer gets the groups of its prompts that this rank sampled; the first gets this rank's figures too.
void RolloutWorker::Impl::send_shares(int64_t batch, const Scored& s, std::vector<double> metrics) {
  const int64_t me = group.rank(), G = cfg.rollout.group_size;
  const int64_t base = layout.rollout_prompts(me).first;
  const int64_t pad = a->policy->manifest().pad_token_id;
  while (!sends.empty() && sends.front().second.ready()) sends.front().second.wait(), sends.pop_front();
  for (int64_t t = 0; t < layout.trainers; ++t) {
    const auto [first, last] = layout.shared(me, t);
    if (first >= last) continue;
    Share share;
    share.batch = batch;
    share.scored = first - base == 0 && (last - first) * G == s.batch.num_rows() ? s
                                                                                  : slice_groups(s, first - base, last - first, pad);
    if (t == layout.metrics_trainer(me)) share.metrics = std::move(metrics);
    auto bytes = pack_share(share);
    auto head = torch::tensor({batch, bytes.numel()}, torch::kLong);
    sends.emplace_back(head, link.send_async(head, t, kTagBatch, "sending a batch to a trainer"));
    sends.emplace_back(bytes, link.send_async(bytes, t, kTagBatch, "sending a batch to a trainer"));
  }
}

TrainSummary RolloutWorker::run() {
  auto& s = *impl_;
  const auto& c = s.cfg;
  TrainSummary sum;
  sum.is_main = false;
  data::Cursor cursor = data::make_cursor(c.data, s.a->examples);
  const auto t0 = core::Clock::now();
  int64_t batches = 0;
  double idle = 0;
  int64_t first_batch = -1;
  while (true) {
    const auto t_wait = core::Clock::now();
    auto msg = torch::empty({kControlSize}, torch::kLong);
    s.link.recv_async(msg, 0, kTagControl, "waiting for trainer 0's go", c.async.wait_timeout_s).wait();
    const Control ctl = control_of(msg);
    if (ctl.kind == Control::kStop) {
      sum.interrupted = ctl.interrupted != 0;
      break;
    }
    if (ctl.epoch >= 0) cursor.restore(ctl.epoch, ctl.position);
    auto& a = *s.a;
    if (ctl.weights && a.lora) {  // the adapters, float32, merged into the copy before the batch samples
      parallel::receive_weights(s.link, 0, kTagWeights, a.lora->parameters(), at::kFloat,
                                c.distributed.bucket_mb * 1024 * 1024, c.async.wait_timeout_s);
      a.sampling_copy->mark_stale();
    } else if (ctl.weights) {
      parallel::receive_weights(s.link, 0, kTagWeights, a.policy->parameters(), rollout::sampling_dtype(c),
                                c.distributed.bucket_mb * 1024 * 1024, c.async.wait_timeout_s);
    }
    const double waited = core::seconds_since(t_wait);
    const auto t_work = core::Clock::now();
    StepMetrics m;
    auto scored = s.source->next_round(cursor, {ctl.version, ctl.batch - ctl.version}, m);
    const double worked = core::seconds_since(t_work);
    if (first_batch < 0) first_batch = ctl.batch;
    else idle += waited;  // waiting before the first batch is start-up, not the staleness bound
    m.rollout_idle = {waited, waited + worked};
    s.send_shares(ctl.batch, scored, scalar_values(m));
    ++batches;
    if (s.group.is_main() && c.logging.progress)
      log::debug("rollout rank: batch {} by version {} ({:.2f}s waiting, {:.2f}s sampling and scoring)", ctl.batch,
                 ctl.version, waited, worked);
  }
  for (auto& [t, p] : s.sends) p.wait();
  s.sends.clear();
  sum.seconds = core::seconds_since(t0);
  sum.first_step = std::max<int64_t>(first_batch, 0);
  sum.last_step = sum.first_step + batches;
  log::info("rollout rank {}: sampled {} batch(es) in {:.1f}s, {:.0f}% of it waiting for the trainers", s.link.rank(),
            batches, sum.seconds, sum.seconds > 0 ? 100.0 * idle / sum.seconds : 0.0);
  return sum;
}

}  // namespace gspo::train
