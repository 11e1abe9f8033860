// The schedule of asynchronous training (distributed.rollout_ranks = K > 0, docs/async.md), shared by the trainers
// (streamed_source.h) and the rollout ranks (rollout_worker.h) so both compute it alike.
//
// World ranks [0, T) train (T = world size - K; rank 0 writes checkpoints and metrics), ranks [T, T + K) sample.
// Batch j (the one rollout step j trains on) is sampled by policy version v(j) (the weights after v rollout steps):
// v(j) = max(start, ceil(max(0, j - S) / n) * n) for S = async.max_staleness, n = async.sync_every and `start` the
// step the run (or its resume) began at, so v(j) <= j and j - v(j) <= S. With partial rollouts (async.partial_rollout)
// a group may be carried up to h = carry_steps() batches after the one that began it, so batches are sampled h
// versions fresher (S - h in the formula) and the oldest token of a trained row is still at most S versions old. Trainer 0 asks for batch j (a control
// message, with the weights when they are new) as soon as version v(j) exists; the rollout ranks sample only what
// was asked, so they run at most S batches ahead. Prompts: rollout rank r samples the global prompts
// [r B / K, (r + 1) B / K) of each batch, trainer t trains on [t B / T, (t + 1) B / T); a rollout rank sends each
// trainer the groups they share.
#pragma once
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "gspo/config/options.h"
#include "gspo/config/validate.h"

namespace gspo::train {

// Point-to-point tags over the world group.
constexpr int kTagControl = 71, kTagWeights = 72, kTagBatch = 73;

struct AsyncLayout {
  int64_t trainers = 1, rollouts = 1, prompts = 1;  // T, K, B
  AsyncLayout(const config::Config& c, int64_t world_size)
      : trainers(world_size - c.distributed.rollout_ranks), rollouts(c.distributed.rollout_ranks),
        prompts(c.rollout.prompts_per_step) {}
  int64_t rollout_world_rank(int64_t r) const { return trainers + r; }
  std::pair<int64_t, int64_t> trainer_prompts(int64_t t) const { return {t * prompts / trainers, (t + 1) * prompts / trainers}; }
  std::pair<int64_t, int64_t> rollout_prompts(int64_t r) const { return {r * prompts / rollouts, (r + 1) * prompts / rollouts}; }
  // The prompts rollout rank r sends trainer t ([first, last), empty when first >= last).
  std::pair<int64_t, int64_t> shared(int64_t r, int64_t t) const {
    const auto a = rollout_prompts(r), b = trainer_prompts(t);
    return {std::max(a.first, b.first), std::min(a.second, b.second)};
  }
  // The trainer that receives rollout rank r's figures for a batch: the first it sends to.
  int64_t metrics_trainer(int64_t r) const { return rollout_prompts(r).first * trainers / prompts; }
};

// v(j); `carry`: config::carry_steps().
inline int64_t sampling_version(int64_t batch, const config::AsyncOptions& a, int64_t start, int64_t carry = 0) {
  const int64_t lo = std::max<int64_t>(0, batch - (a.max_staleness - carry));
  return std::max(start, (lo + a.sync_every - 1) / a.sync_every * a.sync_every);
}

// Trainer 0 -> each rollout rank, one per batch asked for, then one to stop: int64 [kControlSize].
struct Control {
  enum Kind : int64_t { kStop = 0, kSample = 1 };
  int64_t kind = kStop;
  int64_t batch = 0, version = 0;
  int64_t weights = 0;                 // 1: the weights of `version` follow on kTagWeights
  int64_t epoch = -1, position = -1;   // the data cursor before `batch` (first control only; else -1)
  int64_t interrupted = 0;             // kStop: 1 when the trainers stop early, so the rollout ranks exit as they do
};
constexpr int64_t kControlSize = 7;

inline at::Tensor to_tensor(const Control& c) {
  auto t = at::empty({kControlSize}, at::kLong);
  auto* p = t.data_ptr<int64_t>();
  p[0] = c.kind, p[1] = c.batch, p[2] = c.version, p[3] = c.weights, p[4] = c.epoch, p[5] = c.position;
  p[6] = c.interrupted;
  return t;
}
inline Control control_of(const at::Tensor& t) {
  const auto* p = t.data_ptr<int64_t>();
  return {p[0], p[1], p[2], p[3], p[4], p[5], p[6]};
}

}  // namespace gspo::train
