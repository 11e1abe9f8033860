// ZeRO stage 3 over c10d (distributed.zero_stage 3, docs/distributed.md "ZeRO-3"): each rank keeps 1/W of every
// parameter's float32 master, AdamW moments and gradient. The parameters are grouped into units (Policy::
// parameter_units: unit 0 = embedding, final norm and head; unit i + 1 = decoder layer i); a unit's parameters,
// flattened in order and zero-padded to a multiple of W, are cut into W equal contiguous shards, rank r keeping shard r.
//
// A decoder layer's weights exist whole only while it runs: acquire() all-gathers its shards (in the training dtype)
// into one flat buffer its parameters view, release() empties them again, and after its backward backward_done()
// reduce-scatters its gradients (summed in float32) into this rank's gradient shard and drops them. Unit 0 stays whole
// on every rank (the embedding and the head are used at both ends of every pass): its gradients are reduce-scattered
// after each micro-batch (reduce_ends). hold_whole(true) gathers every layer for the rollout and the other
// whole-model passes; with keep_whole the layers stay gathered between steps (refreshed after each optimizer step).
// The optimizer is AdamW on the shards, element for element torch::optim::AdamW (adamw_shard_step), or bitsandbytes'
// 8-bit AdamW (hyper.state_bits 8: every shard whole 256-element blocks, shard_moments.h). With hyper.offload the
// float32 master shards and the moments live in host memory (pinned with CUDA) and the step runs there; a gather
// copies the master shard to the device in the training dtype.
//
// With `overlap`, the collectives run behind compute: prefetch() (the policy's hint of the next layer) starts that
// layer's all-gather while the current one runs, and a layer's gradient reduce-scatter is waited for only when the
// next one starts (or before anything reads the gradient shards). At most one layer is gathered ahead (or kept after
// its release, when the hint names the layer held: the last layer of a forward, needed again first in the backward)
// and one reduce-scatter is in flight: one more layer in the training dtype and one float32 flat layer per rank.
//
// Every rank must run the same gathers and reduce-scatters in the same order: the same number of micro-batches and
// passes (UpdateEngine::lockstep()).
//
// One file per job: zero3.cpp (the shard layout and the gate), zero3_grads.cpp (gradient reduction and norm),
// zero3_adamw.cpp (the optimizer step), zero3_checkpoint.cpp (shard state, its re-cut, the float32 gather); the
// per-unit state they share is zero3_unit.h.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gspo/model/param_gate.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/sharded_adamw.h"

namespace gspo::model { class Policy; }

namespace gspo::parallel {

class Zero3 final : public model::ParamGate {
 public:
  // Takes the policy's float32 weights (identical on every rank; on the CPU or on `device`), keeps this rank's shards
  // on `device` and sets itself as the policy's gate: the decoder layers' parameters are emptied, unit 0's cast to
  // `dtype` (the training dtype), and the policy moved to `device`. A policy loaded on the CPU thus never has its
  // whole float32 weights on the device (host memory: one unit's flat copy more while it is cut). Throws ConfigError
  // when the policy has no per-layer methods.
  //
  // `frozen` (a base that low-rank adapters train on, model.lora_rank): the shards are the weights themselves in
  // `dtype` (the policy may already hold them in it), with no masters, moments or gradient shards, and no parameter
  // requires a gradient: per rank b (N - N0) / W bytes of base instead of 16 N / W (unit 0, whole anyway, keeps no
  // shard). Gradients are never reduced
  // (backward_done() and reduce_ends() drop any), and the optimizer's methods (reduce_gradients, step, the shard
  // state) are not to be called.
  Zero3(model::Policy& policy, c10::ScalarType dtype, AdamWHyper hyper, bool keep_whole, bool overlap,
        c10::Device device, Comm& comm, bool frozen = false);
  ~Zero3() override;
  Zero3(const Zero3&) = delete;
  Zero3& operator=(const Zero3&) = delete;

  void acquire(int64_t layer) override;
  void release(int64_t layer) override;
  void backward_done(int64_t layer) override;
  void prefetch(int64_t layer) override;
  bool whole() const override { return whole_holds_ > 0; }

  // Layer gathers since the last call: all of them, and those a prefetch() had started or kept before the acquire.
  model::GateStats take_gather_stats() { return std::exchange(stats_, {}); }

  // Collective: every decoder layer gathered (on) until the matching hold_whole(false).
  void hold_whole(bool on);
  // When true, backward_done() discards the gradients instead of reducing them, and a unit's parameters are not
  // marked as used: a pass that only keeps this rank in step with the others (UpdateEngine::lockstep()).
  void set_idle(bool idle) { idle_ = idle; }

  void zero_grad();
  // Collective: unit 0's gradients of the last backward into this rank's shard; call after every micro-batch.
  void reduce_ends();
  // Collective: which parameters had a gradient on some rank (kept from then on, as torch's AdamW keeps a zeroed
  // .grad), and the global L2 norm of the reduced gradient.
  double reduce_gradients();
  // Collective: AdamW at `lr` on every shard with the gradient scaled by `grad_scale`; gathered units re-gathered.
  void step(double lr, double grad_scale);

  int64_t state_bytes() const;        // AdamW moments held by this rank
  // Masters, moments and gradient shards, plus the parameters whole now and their gradients (training tensors).
  int64_t model_state_bytes() const;
  // Bytes of this rank's weight shards (float32 masters; frozen: the base's shards in the training dtype).
  int64_t shard_bytes() const;
  int64_t steps() const { return step_; }
  int64_t numel() const { return numel_; }

  // This rank's optimizer state: [header (int64: version, world size, rank, step, units, then each unit's element
  // count), then per unit exp_avg and exp_avg_sq shards]. The weights are not in it: resume takes them from the
  // checkpoint's consolidated float32 policy.pt.
  std::vector<at::Tensor> shard_state() const;
  // Re-cuts optimizer state written by `old_world` ranks: read(r) returns rank r's shard_state(), each read once and
  // dropped before the next (host memory: one old shard at a time). IoError naming `from` when they do not match.
  // Which parameters the optimizer steps starts afresh, as after any resume (a parameter joins with its first gradient).
  void load_shards(int64_t old_world, const std::function<std::vector<at::Tensor>(int64_t)>& read,
                   const std::string& from);
  // Collective: whether every rank's master shards are finite.
  bool finite();
  // Collective: the float32 masters gathered unit by unit; on rank 0 full[i] is parameter i's value (Policy::
  // parameters() order) in host memory (4 bytes x parameters), elsewhere empty.
  std::vector<at::Tensor> gather_float32();
  // The policy's parameters in Policy::parameters() order (for gather_float32's result).
  std::vector<at::Tensor> parameters() const;

  struct Unit;

 private:
  void gather(Unit& u);
  Comm::Pending start_gather(Unit& u);
  void empty(Unit& u);
  Unit& layer_unit(int64_t layer);
  void reduce_unit(Unit& u);
  void drop_ahead();     // the layer gathered ahead (if any and not held) waited for and freed
  void settle_grads();   // the reduce-scatter in flight (if any) waited for and added into its gradient shard
  model::Policy& policy_;
  c10::ScalarType dtype_;
  c10::Device device_;  // where the layers run and the gradient shards live (masters too unless offloaded)
  AdamWHyper h_;
  Comm& comm_;
  std::vector<Unit> units_;
  int64_t numel_ = 0, step_ = 0, whole_holds_ = 0;
  bool keep_whole_ = false, overlap_ = true, idle_ = false, frozen_ = false;
  int64_t ahead_ = -1;        // the layer gathered (or gathering) ahead of its acquire, or kept at its release
  Comm::Pending ahead_fetch_;  // its all-gather, while in flight
  struct GradFlight {
    Comm::Pending pending;
    Unit* unit = nullptr;
    at::Tensor shard;  // this rank's sum, once pending is done
  } rs_;
  model::GateStats stats_;
};

}  // namespace gspo::parallel
