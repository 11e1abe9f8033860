// The sections of options.h that lay a run over processes: distributed (data parallelism, ZeRO, rollout ranks) and
// async (the staleness bound, partial rollouts). Kept apart only for length; options.h includes this file and the
// Config there holds both sections like every other.
#pragma once
#include <cstdint>
#include <string>

#include "gspo/config/choices.h"
#include "gspo/config/rule.h"

namespace gspo::config {

// Data-parallel training across processes (docs/distributed.md). The rank layout comes from the launcher's
// environment (torchrun: RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT; Slurm: SLURM_PROCID/...); a single
// process needs none of it.
struct DistributedOptions {
  Backend backend = Backend::kAuto;
  double init_timeout_s = 300;
  double timeout_s = 600;
  double bucket_mb = 25;
  int64_t zero_stage = 0;
  bool zero3_keep_whole = false;
  bool zero3_overlap = true;
  bool optimizer_offload = false;
  int64_t rollout_ranks = 0;
  int64_t expert_parallel = 1;

  template <class V>
  void visit(V&& v) {
    v("backend", backend, "process-group backend: auto (nccl on CUDA, gloo on CPU), gloo or nccl",
      choice_rule(backend));
    v("init_timeout_s", init_timeout_s, "seconds the ranks wait for each other at start-up", greater_than(0));
    v("timeout_s", timeout_s, "seconds before a stalled collective fails (a dead or hung rank)", greater_than(0));
    v("bucket_mb", bucket_mb, "gradient all-reduce bucket size in MB", greater_than(0));
    v("zero_stage", zero_stage, "0 = every rank keeps the whole AdamW state; 1 = moments sharded (ZeRO-1); 3 = "
      "weights, float32 masters, gradients and moments sharded, each decoder layer gathered while it runs (ZeRO-3: "
      "needs the per-layer model methods and activation checkpointing; docs/distributed.md)", between(0, 3));
    v("zero3_keep_whole", zero3_keep_whole, "zero_stage 3: keep the whole weights gathered for the rollout between "
      "rollouts too (training-dtype bytes x parameters more per rank; the layers then need no gathers, and the "
      "copy is refreshed after every optimizer step); false = gathered for each rollout and freed after it", any());
    v("zero3_overlap", zero3_overlap, "zero_stage 3: overlap the collectives with compute: the next decoder layer's "
      "all-gather starts while the current one runs, and a layer's gradient reduce-scatter completes during the "
      "next layer's backward (one more gathered layer and one more float32 layer gradient per rank); false = every "
      "collective blocks", any());
    v("optimizer_offload", optimizer_offload, "zero_stage 1 or 3: keep each rank's shard of the AdamW moments "
      "(optimizer.state_bits 32 or 8) and, with zero_stage 3, of the float32 masters in host memory (staging pinned "
      "when CUDA is there) and run the update there, the shard's parameters and gradient copied to the host and back "
      "a chunk at a time: device memory traded for host memory and 13 bytes a shard element of transfers a step "
      "(docs/optimizer.md \"Offload\"; gspo plan shows both); refused at start-up when the node's ranks would need "
      "more host memory than it has available", any());
    v("rollout_ranks", rollout_ranks, "ranks that only sample (asynchronous training, docs/async.md): the last K "
      "ranks of the world sample and score the batches and stream them to the first world size - K, which only train "
      "and send them new weights (async.*); 0 = every rank samples, then every rank trains (the synchronous schedule)",
      at_least(0));
    v("expert_parallel", expert_parallel, "expert parallelism (docs/distributed.md, \"Expert parallelism\"): groups "
      "of E consecutive ranks share each MoE layer's experts, rank r of a group holding experts [r n/E, (r+1) n/E) "
      "(their weights, float32 masters, gradients and moments); tokens travel to their experts by all-to-all. E "
      "divides the world size and every MoE layer's expert count; needs an MoE model with the expert-parallel methods "
      "(ep_api) and zero_stage 1 (the rest of the moments sharded over the world, the experts' over the ranks holding "
      "the same experts); 1 = off", at_least(1));
  }
};

// Asynchronous training (distributed.rollout_ranks > 0, docs/async.md): how far the rollout ranks may run ahead; and
// partial rollouts (rows not finished when a step's batch is complete carried to the next step).
struct AsyncOptions {
  int64_t max_staleness = 0;
  int64_t sync_every = 1;
  double wait_timeout_s = 3600;
  bool partial_rollout = false;
  int64_t prompts_in_flight = 0;

  template <class V>
  void visit(V&& v) {
    v("max_staleness", max_staleness, "policy versions a sample may lag behind the weights it trains (version v: the "
      "weights after v rollout steps). Batch j is sampled by version max(0, j - max_staleness), rounded up to a "
      "version the trainers sent (sync_every), so the rollout ranks run up to this many steps ahead; 0 = every batch "
      "sampled by the weights that train on it (the synchronous run's samples, drawn on other ranks). With "
      "partial_rollout: the versions between a group's first token and the step that trains it", at_least(0));
    v("sync_every", sync_every, "rollout steps between weight sends to the rollout ranks (at most max_staleness + 1, "
      "so the bound holds)", at_least(1));
    v("wait_timeout_s", wait_timeout_s, "seconds a trainer waits for its share of a batch, or a rollout rank for the "
      "trainers' go, before failing as a hung peer (a rank that died fails the wait at once); above the longest "
      "batch's sampling and the longest training step", greater_than(0));
    v("partial_rollout", partial_rollout, "partial rollouts: the sampling ranks (every rank, or the rollout ranks) "
      "keep prompts_in_flight groups being sampled; a batch's call stops once prompts_per_step of them have ended "
      "(the longest response no longer holds it) and the step trains on those, oldest first; the rows still running "
      "continue in the next batch's call under the newer weights (their cache recomputed), so a row's tokens may span "
      "versions (max_staleness bounds the oldest). Needs max_staleness >= 1 and a model with the slot methods; not "
      "with tools or dynamic sampling", any());
    v("prompts_in_flight", prompts_in_flight, "partial_rollout: groups being sampled at once, between "
      "rollout.prompts_per_step and (max_staleness + 1) x prompts_per_step (so no group waits past the bound); beside "
      "rollout ranks each prompts_per_step above the first takes a version of the bound from running ahead. 0 = "
      "(max_staleness + 1) x prompts_per_step without rollout ranks, min(2, max_staleness + 1) x prompts_per_step "
      "with them", at_least(0));
  }
};

}  // namespace gspo::config
