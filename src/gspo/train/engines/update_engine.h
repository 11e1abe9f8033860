// The optimizer side of training behind one interface, five engines (engine_choice.h says which a config gets):
// plain AdamW (every rank keeps the whole state, gradients all-reduced in buckets), ZeRO-1 (AdamW moments sharded
// over the ranks, parallel/sharded_adamw.h), ZeRO-3 (weights, masters, gradients and moments sharded per decoder
// layer, parallel/zero3.h; zero3_engine.cpp), ZeRO-3 with low-rank adapters, and expert parallelism, each with float32
// weights or bf16 weights carrying forward/backward and float32 master weights that the optimizer updates
// (model.dtype, master_weights.h), and float32 or 8-bit moments, on the device or offloaded. Every branch on the
// optimizer, the sharding or the precision lives behind this interface, and so do the engine's checkpoint files.
//
// One optimizer step per mini-batch:  zero_grad, (forward, backward, after_backward) per micro-batch, reduce, step.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gspo/config/options.h"
#include "gspo/model/param_gate.h"

namespace gspo::parallel { class Comm; class ExpertShards; }
namespace gspo::model { class Policy; class LoraAdapters; }

namespace gspo::train {

class UpdateEngine {
 public:
  virtual ~UpdateEngine() = default;

  // Clears the gradients the optimizer reads (float32 masters or the policy's parameters).
  virtual void zero_grad() = 0;
  // After each micro-batch's backward: bf16 gradients are added into the masters' float32 gradients; float32: nothing.
  virtual void after_backward() = 0;
  // Collective. Sums the gradients over the ranks and clips them to optimizer.grad_clip; returns the global L2 norm
  // before clipping (possibly non-finite: the caller then skips step()).
  virtual double reduce() = 0;
  // Collective. One AdamW step at `lr` with the gradients reduce() left, then the new weights into the policy.
  virtual void step(double lr) = 0;
  // Bytes of AdamW moments this rank holds, read off the optimizer's own tensors.
  virtual int64_t state_bytes() const = 0;
  // Bytes of training state this rank holds: the policy's weights and their gradients, float32 masters and their
  // gradients (bf16 training), state_bytes(), and ZeRO-1's gradient shard; read off the tensors as they are now.
  virtual int64_t model_state_bytes() const = 0;

  // Collective: every weight finite (before a checkpoint is written).
  virtual bool weights_finite() = 0;
  // Collective: what save() writes is gathered (ZeRO-1's moments, ZeRO-3's float32 weights on rank 0) or written by
  // each rank into `staging` (ZeRO-3's shards; a directory beside the checkpoints that save() empties); call before save().
  virtual void gather_for_save(const std::string& staging) { (void)staging; }
  // Writes the optimizer's files into a (temporary) checkpoint directory. Rank 0 only, after gather_for_save().
  virtual void save(const std::string& dir) = 0;
  // Restores this rank's state from a checkpoint directory; ConfigError when it was written by the other engine.
  virtual void load(const std::string& dir) = 0;

  // Collective with ZeRO-3 (elsewhere nothing): `on` gathers every decoder layer's weights whole, for the passes that
  // need the whole model (rollout, validation, greedy evaluation); `off` gives them back.
  virtual void hold_whole(bool on) { (void)on; }
  // True when every rank must run the same number of forward/backward passes (ZeRO-3 gathers and reduces in them).
  virtual bool lockstep() const { return false; }
  // Lockstep engines: the passes that follow only keep this rank in step (their gradients are discarded).
  virtual void set_idle(bool idle) { (void)idle; }
  // ZeRO-3: decoder-layer gathers since the last call, and how many of them a prefetch had started; else zeros.
  virtual model::GateStats take_gather_counts() { return {}; }
  // Expert parallelism: the sampling passes since the last call this rank ran with rows of its own, and those it
  // only served (its sampling over, its group's not); else zeros.
  struct RolloutPasses {
    int64_t own = 0, served = 0;
  };
  virtual RolloutPasses take_rollout_passes() { return {}; }

  // Runs `f` while the policy holds the float32 weights the optimizer updates (bf16 training: the masters, so a
  // checkpoint resumes exactly; float32: the policy as it is).
  virtual void with_float32_policy(const std::function<void()>& f) = 0;
};

// The whole weights held for a scope (ZeRO-3; elsewhere nothing): hold_whole(true) when made (collective), and
// hold_whole(false) when the scope ends, by a return or an exception alike. `hold` false: a guard that does nothing
// (a pass only some runs make, such as the held-out evaluation).
class WholeWeights {
 public:
  explicit WholeWeights(UpdateEngine& engine, bool hold = true) : engine_(hold ? &engine : nullptr) {
    if (engine_) engine_->hold_whole(true);
  }
  ~WholeWeights() {
    if (!engine_) return;
    try {
      engine_->hold_whole(false);  // gives local copies back: no collective, nothing another rank waits for
    } catch (...) {
    }
  }
  WholeWeights(const WholeWeights&) = delete;
  WholeWeights& operator=(const WholeWeights&) = delete;

 private:
  UpdateEngine* engine_;
};

struct EngineOptions {
  config::OptimizerOptions optimizer;
  config::Dtype dtype = config::Dtype::kFloat32;  // model.dtype
  int64_t zero_stage = 0;                          // distributed.zero_stage
  bool keep_whole = false;                         // distributed.zero3_keep_whole
  bool overlap = true;                             // distributed.zero3_overlap
  bool offload = false;                            // distributed.optimizer_offload (the sharded engines)
  c10::Device device = c10::kCPU;                  // ZeRO-3: where the shards go (the policy may arrive on the CPU)
  double bucket_bytes = 25.0 * 1024 * 1024;        // gradient all-reduce buckets (plain AdamW)
  // model.lora_rank > 0: the optimizer updates these adapters (float32, already gating the policy) and nothing else;
  // the base stays frozen, cast to bf16 for model.dtype bfloat16 (no masters: nothing of it is updated). The engine's
  // checkpoint files are then the adapters' optimizer state (train/checkpointing.h writes the adapters themselves).
  model::LoraAdapters* lora = nullptr;
  // distributed.expert_parallel > 1: the experts this rank keeps (the others freed, parallel/expert_shards.h) and the
  // ranks keeping the same ones (make_update_engine then makes the expert-parallel engine: zero_stage 1).
  parallel::ExpertShards* experts = nullptr;
  parallel::Comm* expert_replicas = nullptr;
};

// The engine train::choose_engine (engine_choice.h) names for `opts`, defined there. Sets requires_grad on the
// policy's parameters and, for bfloat16, takes float32 masters from its (float32) weights and casts the policy to bf16
// (with `lora`: see above). The policy, `comm` and the adapters must outlive the engine.
std::unique_ptr<UpdateEngine> make_update_engine(model::Policy& policy, const EngineOptions& opts, parallel::Comm& comm);
// The replicated (zero_stage 0) and ZeRO-1 engines (update_engine.cpp); the others: zero3_engine.h.
std::unique_ptr<UpdateEngine> make_replicated_engine(model::Policy& policy, const EngineOptions& opts,
                                                     parallel::Comm& comm);
std::unique_ptr<UpdateEngine> make_zero1_engine(model::Policy& policy, const EngineOptions& opts, parallel::Comm& comm);

}  // namespace gspo::train
